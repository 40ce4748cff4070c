# Benchmark module: 20 `terraform_data` resources (built-in provider, nothing to download),
# one output, so that every engine step (init, plan, show, apply, output) has real work to do.

variable "prefix" {
  type    = string
  default = "bench"
}

resource "terraform_data" "item" {
  count = 20
  input = "${var.prefix}-${count.index}"
}

output "items" {
  value = terraform_data.item[*].output
}

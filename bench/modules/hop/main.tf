# One link of a chain: reads its parent's output `out` as the variable `out` (empty for the
# first link), publishes its own.
variable "out" {
  type    = string
  default = ""
}

resource "terraform_data" "link" {
  input = "${var.out}+"
}

output "out" {
  value = terraform_data.link.output
}

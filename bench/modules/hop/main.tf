# One link of a chain: reads its parent's output `out` (empty for the first), publishes its own.
variable "in" {
  type    = string
  default = ""
}

resource "terraform_data" "link" {
  input = "${var.in}+"
}

output "out" {
  value = terraform_data.link.output
}

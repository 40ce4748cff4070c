# A module with no provider at all: the built-in terraform_data resource.
variable "prefix" {
  type    = string
  default = "demo"
}

variable "length" {
  type    = number
  default = 2
}

resource "terraform_data" "pet" {
  input = join("-", concat([var.prefix], [for i in range(var.length) : "pet${i}"]))
}

output "name" {
  value = terraform_data.pet.output
}

output "id" {
  value = terraform_data.pet.id
}

# A module using the test provider example.com/sng/file: its resources are files on disk,
# so drift, import and destroy can be seen for real.
terraform {
  required_providers {
    file = { source = "example.com/sng/file" }
  }
}

variable "greeting" {
  type = string
}

variable "name" {
  type = string
}

variable "ssh_public_key" {
  type      = string
  sensitive = true
}

# Adopted from an existing file by the Workspace's `imports`.
resource "file_document" "readme" {
  path    = "readme.txt"
  content = "This directory is managed by sng.\n"
}

resource "file_document" "app" {
  path    = "app.txt"
  content = "${var.greeting}, ${var.name}!\n"
  secret  = var.ssh_public_key
}

output "path" {
  value = file_document.app.path
}

output "sha256" {
  value = file_document.app.sha256
}

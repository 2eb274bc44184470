"""The benchmark (`trajectory-review bench`) and the synthetic trace generator: checkout
tools, installed beside the package by `make setup`, never shipped in its wheel."""

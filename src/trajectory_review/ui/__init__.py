"""Shiny modules: they wire inputs to the package's functions and render its HTML."""

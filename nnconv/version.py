"""The package version (its own module, so every stage can name it without importing the package root)."""

__version__ = "0.1.0"

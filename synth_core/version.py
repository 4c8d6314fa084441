"""The package version (read by the report and the experiment records)."""

__version__ = "0.1.0"

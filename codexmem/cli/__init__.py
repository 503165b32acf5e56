"""The command line: one module per command, each thin over the services."""

"""Record channels: typed, schema-validated items (a bug tracker, a task list) kept next to memory."""

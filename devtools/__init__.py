"""Developer tools: the synthetic sample catalog, the import-graph check. The top layer: nothing imports it but
the CLI, and it may import everything below (docs/architecture.md)."""

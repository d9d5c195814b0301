"""The pytest plugin: the `mcp` fixture and spec examples as tests (being built)."""

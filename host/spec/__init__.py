"""The spec layer: YAML files to checked, typed specs. Knows nothing of HTTP or JSON-RPC."""

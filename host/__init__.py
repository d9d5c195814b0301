"""host: a declarative, YAML-configured tool host for the Model Context Protocol."""

from host.errors import ToolError

__all__ = ["ToolError"]
__version__ = "0.1.0"

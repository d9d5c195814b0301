"""host: a declarative, YAML-configured tool host for the Model Context Protocol.

The public face is small on purpose: handlers import :class:`ToolError`; programs and tests that
serve specs use :func:`create_app`. Everything else is reached through its own module.
"""

from typing import TYPE_CHECKING, Any

from host.errors import ToolError

if TYPE_CHECKING:
    from host.web.app import create_app

__all__ = [
    # For handlers: a failure the model should read.
    "ToolError",
    # About the package.
    "__version__",
    # For programs and tests: the WSGI app serving a spec directory.
    "create_app",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # NOTE: create_app is imported on first use, so handlers (`from host import ToolError`) and
    # `host validate` do not load the web stack.
    if name == "create_app":
        from host.web.app import create_app

        return create_app
    raise AttributeError(f"module 'host' has no attribute {name!r}")

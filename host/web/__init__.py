"""The web layer: the Falcon WSGI app that serves MCP over Streamable HTTP."""

from host.web.app import create_app

__all__ = ["create_app"]

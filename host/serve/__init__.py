"""``host serve``'s master: gunicorn in this process, spec reloads, and the store file's watch."""

from host.serve.start import ServeOptions, serve

__all__ = ["ServeOptions", "serve"]

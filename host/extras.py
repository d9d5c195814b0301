"""The optional extras, and install lines for them that work as written on any machine.

The distribution is named ``declarative-mcp-host``; the import package and the command stay
``host``. A line naming ``host[...]`` would ask the package index for a distribution called
``host``: a common word, taken or takeable by an unrelated project. Installing an extra's own
requirements into the host's environment works wherever the host came from (a clone, a wheel).
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "REQUIREMENTS", "install_line"]

DISTRIBUTION = "declarative-mcp-host"
"""The distribution's name on an index and in a wheel's file name (``declarative_mcp_host-...``)."""

#: What each extra installs, as pip arguments (``pyproject.toml``'s optional dependencies).
REQUIREMENTS = {
    "auth": "'pyjwt[crypto]>=2.10'",
    "otel": (
        "'opentelemetry-api>=1.25' 'opentelemetry-sdk>=1.25' "
        "'opentelemetry-exporter-otlp-proto-http>=1.25'"
    ),
    "redis": "'redis>=5'",
    "fast": "'gunicorn[fast]>=25'",
    "pytest": "'pytest>=8'",
}


def install_line(extra: str) -> str:
    """A line that installs ``extra`` into the running environment, as a user may paste it."""
    return (
        f"pip install {REQUIREMENTS[extra]} (the {extra} extra; in a clone of the host: "
        f"pip install -e '.[{extra}]')"
    )

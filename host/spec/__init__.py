"""The spec layer: YAML files to checked, typed specs. Knows nothing of HTTP or JSON-RPC."""

from host.spec.check import CheckResult, check_project, load_project

__all__ = ["CheckResult", "check_project", "load_project"]

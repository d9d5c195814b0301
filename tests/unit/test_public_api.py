"""The package's public face: exactly the names we mean to support, and nothing by accident."""

from __future__ import annotations

import tomllib

import host
import host.errors
import host.web.app
from support.paths import ROOT


def test_all_is_exactly_the_intended_names() -> None:
    assert host.__all__ == ["ToolError", "__version__", "create_app"]


def test_every_public_name_is_what_it_says() -> None:
    assert host.ToolError is host.errors.ToolError
    assert issubclass(host.ToolError, host.errors.HostError)
    assert host.create_app is host.web.app.create_app


def test_version_matches_the_project_metadata() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert host.__version__ == pyproject["project"]["version"]


def test_star_import_gives_the_public_names_only() -> None:
    namespace: dict[str, object] = {}
    exec("from host import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(host.__all__)

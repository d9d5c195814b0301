"""The pytest plugin shipped with host: the ``mcp`` fixture, and spec examples as test items.

Installed with the package (entry point ``pytest11: host``), so a project that installs host gets:

- ``mcp``: a :class:`~host.testing.client.McpClient` of the real WSGI app serving the spec
  directory, in-process, with a fresh data directory per test (``$HOST_DATA_DIR``); its
  ``mcp.approvals`` and ``mcp.audit`` reach the app's store (remembered approvals, the audit trail);
- ``host_specs`` / ``host_handlers`` / ``host_data_dir`` / ``host_env``: the pieces ``mcp`` is
  made of, each a fixture a test module or ``conftest.py`` may override;
- one test item per ``examples:`` entry of the spec files pytest is asked to collect (add the spec
  directory to ``testpaths``, or name it on the command line).

Configuration (ini file or ``[tool.pytest.ini_options]``), command-line options win:

- ``host_specs`` / ``--host-specs``: the spec directory (``specs``);
- ``host_handlers`` / ``--host-handlers``: the handlers directory (``handlers`` beside the specs);
- ``host_env``: lines ``NAME=VALUE`` set for handlers during each test, ``{data_dir}`` expanded;
- ``host_examples``: collect spec examples as tests (true).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.client.match import Like, differences
from host.errors import HostError, SpecError
from host.spec.model import Project
from host.spec.paths import default_handlers_dir
from host.testing.client import McpClient
from host.testing.examples import Case, run_example
from host.testing.harness import expand, load, serve
from host.testing.runner import cases, describe_spec_error

__all__ = [
    "ExampleItem",
    "SpecFile",
    "host_data_dir",
    "host_env",
    "host_handlers",
    "host_specs",
    "mcp",
]

_PROJECTS = pytest.StashKey[dict[tuple[Path, Path], Project | SpecError]]()
_SPEC_SUFFIXES = (".yaml", ".yml")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the plugin's ini keys and command-line options."""
    group = parser.getgroup("host", "host: MCP tool specs")
    group.addoption("--host-specs", metavar="DIR", help="spec directory served by `mcp`")
    group.addoption("--host-handlers", metavar="DIR", help="handlers directory for the specs")
    parser.addini("host_specs", "spec directory served by the `mcp` fixture", default="specs")
    parser.addini("host_handlers", "handlers directory (default: `handlers` beside the specs)")
    parser.addini(
        "host_env", "NAME=VALUE lines set for handlers in each test", type="linelist", default=[]
    )
    parser.addini("host_examples", "collect spec examples as tests", type="bool", default=True)


def pytest_configure(config: pytest.Config) -> None:
    """Start the per-session cache of loaded spec directories."""
    config.stash[_PROJECTS] = {}


def _ini_base(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath else config.rootpath


def configured_specs(config: pytest.Config) -> Path:
    """The spec directory from ``--host-specs``, else ``host_specs``, else ``specs``."""
    option = config.getoption("host_specs", default=None)
    if option:
        return (config.invocation_params.dir / str(option)).resolve()
    return (_ini_base(config) / str(config.getini("host_specs") or "specs")).resolve()


def configured_handlers(config: pytest.Config, specs_dir: Path) -> Path:
    """The handlers directory from the options, else ``handlers`` beside ``specs_dir``."""
    option = config.getoption("host_handlers", default=None)
    if option:
        return (config.invocation_params.dir / str(option)).resolve()
    ini = str(config.getini("host_handlers") or "")
    if ini:
        return (_ini_base(config) / ini).resolve()
    return default_handlers_dir(specs_dir)


def configured_env(config: pytest.Config) -> dict[str, str | None]:
    """The ``host_env`` lines as a mapping.

    Raises:
        pytest.UsageError: A line is not ``NAME=VALUE``.
    """
    env: dict[str, str | None] = {}
    for line in config.getini("host_env"):
        name, sep, value = str(line).partition("=")
        if not sep or not name.strip():
            raise pytest.UsageError(f"host_env: each line must be NAME=VALUE, got {line!r}")
        env[name.strip()] = value.strip()
    return env


def project_for(config: pytest.Config, specs_dir: Path, handlers_dir: Path) -> Project:
    """The loaded spec directory, loaded once per session.

    Raises:
        SpecError: The specs have problems (also remembered, so each test reports it fast).
    """
    cache = config.stash[_PROJECTS]
    key = (specs_dir.resolve(), handlers_dir.resolve())
    if key not in cache:
        try:
            cache[key] = load(specs_dir, handlers_dir)
        except SpecError as exc:
            cache[key] = exc
    found = cache[key]
    if isinstance(found, SpecError):
        raise found
    return found


@pytest.fixture
def host_specs(request: pytest.FixtureRequest) -> Path:
    """The spec directory ``mcp`` serves; override this fixture to serve another."""
    return configured_specs(request.config)


@pytest.fixture
def host_handlers(request: pytest.FixtureRequest, host_specs: Path) -> Path:
    """The handlers directory for ``host_specs``."""
    return configured_handlers(request.config, host_specs)


@pytest.fixture
def host_data_dir(tmp_path: Path) -> Path:
    """This test's data directory: ``$HOST_DATA_DIR`` and ``ctx.data_dir`` for handlers."""
    return tmp_path / "host-data"


@pytest.fixture
def host_env(request: pytest.FixtureRequest) -> dict[str, str | None]:
    """More variables for handlers during the test (``host_env`` ini lines by default)."""
    return configured_env(request.config)


@pytest.fixture
def mcp(
    request: pytest.FixtureRequest,
    host_specs: Path,
    host_handlers: Path,
    host_data_dir: Path,
    host_env: dict[str, str | None],
) -> Iterator[McpClient]:
    """A modern MCP client of the real app serving ``host_specs``, with fresh data."""
    if not host_specs.is_dir():
        pytest.fail(_no_specs(request.config, host_specs), pytrace=False)
    try:
        project = project_for(request.config, host_specs, host_handlers)
    except SpecError as exc:
        problems = "\n".join(describe_spec_error(exc))
    else:
        with serve(
            host_specs, host_handlers, data_dir=host_data_dir, env=host_env, project=project
        ) as client:
            yield client
        return
    pytest.fail(f"the specs in {host_specs} cannot be served:\n{problems}", pytrace=False)


def _no_specs(config: pytest.Config, specs_dir: Path) -> str:
    """Why ``mcp`` has no spec directory to serve, and the three ways to name the right one."""
    if config.getoption("host_specs", default=None):
        came = f"--host-specs, relative to {config.invocation_params.dir}"
    elif config.inipath is not None:
        came = f"host_specs = {config.getini('host_specs')} in {config.inipath}, relative to it"
    else:
        came = (
            f"the default host_specs = specs, relative to {config.rootpath} (pytest found no "
            "ini file there)"
        )
    return (
        f"the mcp fixture has no spec directory to serve: {specs_dir} does not exist (from "
        f"{came}); set host_specs in the pytest.ini (or [tool.pytest.ini_options]) beside your "
        "tests, as host init writes it, pass --host-specs DIR, or override the host_specs fixture"
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect the examples of spec files inside the configured spec directory."""
    config = parent.config
    if file_path.suffix not in _SPEC_SUFFIXES or not config.getini("host_examples"):
        return None
    specs_dir = configured_specs(config)
    if not file_path.resolve().is_relative_to(specs_dir):
        return None
    return SpecFile.from_parent(parent, path=file_path)


class SpecFile(pytest.File):
    """A spec file: one item per example of the tools written in it."""

    def collect(self) -> Iterator[pytest.Item]:
        """One :class:`ExampleItem` per example in this file."""
        specs_dir = configured_specs(self.config)
        handlers_dir = configured_handlers(self.config, specs_dir)
        try:
            project = project_for(self.config, specs_dir, handlers_dir)
        except SpecError as exc:
            lines = "\n".join(describe_spec_error(exc))
            raise self.CollectError(f"the specs in {specs_dir} have errors:\n{lines}") from None
        for case in cases(project, only=self.path):
            yield ExampleItem.from_parent(
                self,
                name=f"{case.tool}[{case.example.name}]",
                case=case,
                specs_dir=specs_dir,
                handlers_dir=handlers_dir,
            )


class ExampleFailed(AssertionError):
    """An example's outcome differs from its ``expect``."""


class ExampleItem(pytest.Item):
    """One ``examples:`` entry, run against a fresh app with fresh data."""

    def __init__(self, *, case: Case, specs_dir: Path, handlers_dir: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.specs_dir = specs_dir
        self.handlers_dir = handlers_dir

    def runtest(self) -> None:
        """Run the example; raise :class:`ExampleFailed` listing what differed."""
        project = project_for(self.config, self.specs_dir, self.handlers_dir)
        with tempfile.TemporaryDirectory(prefix="host-example-") as data:
            data_dir = Path(data)
            env = expand(configured_env(self.config), data_dir)
            try:
                with serve(
                    self.specs_dir, self.handlers_dir, data_dir=data_dir, env=env, project=project
                ) as client:
                    problems = run_example(client, self.case)
            except HostError as exc:
                problems = [f"the host could not serve the specs: {exc}"]
        if problems:
            raise ExampleFailed("\n".join(problems))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        """The differences, without a Python traceback."""
        if isinstance(excinfo.value, ExampleFailed):
            return f"example {self.case.title} ({self.case.where}) failed:\n{excinfo.value}"
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the example is written."""
        return self.path, max(self.case.line - 1, 0), f"example {self.case.title}"


def pytest_assertrepr_compare(op: str, left: Any, right: Any) -> list[str] | None:
    """Explain a failed ``actual == like(expected)``, key by key."""
    if op != "==":
        return None
    if isinstance(right, Like):
        expected, actual = right, left
    elif isinstance(left, Like):
        expected, actual = left, right
    else:
        return None
    return [f"{actual!r} == {expected!r}", *differences(expected, actual)]

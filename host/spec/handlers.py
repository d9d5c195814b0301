"""Find handlers (``module:function``) under a handlers directory by parsing, not importing.

``helpdesk:close_ticket`` is ``function close_ticket`` in ``HANDLERS/helpdesk.py``; a dotted module
(``billing.refunds:issue``) is ``HANDLERS/billing/refunds.py`` (or a package's ``__init__.py``).
Parsing with :mod:`ast` keeps validation free of side effects: a handler module that connects to a
database at import time is still checked without connecting. ``import_modules=True`` (``--import``)
also imports each module, to catch import errors and read exact signatures.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from host.errors import HandlerProblem
from host.spec.model import Pos
from host.spec.rulebook import did_you_mean

__all__ = [
    "Handler",
    "HandlerIndex",
    "HandlerProblem",
    "Param",
    "is_async",
    "params_of",
    "signature_problem",
]

ParamKind = Literal["positional_only", "normal", "keyword_only", "var_positional", "var_keyword"]


@dataclass(frozen=True)
class Param:
    """One parameter of a handler."""

    name: str
    kind: ParamKind
    has_default: bool


@dataclass(frozen=True)
class Handler:
    """A handler that exists; ``params`` is None when its signature cannot be known statically."""

    ref: str
    file: Path
    line: int
    params: tuple[Param, ...] | None
    is_async: bool = False

    @property
    def where(self) -> str:
        """``handlers/helpdesk.py:58``."""
        return f"{self.file}:{self.line}"


def signature_problem(ref: str, params: tuple[Param, ...] | None, *, is_async: bool) -> str | None:
    """Why the host cannot call handler ``ref`` as written, or None.

    One wording for both places that refuse such a handler: the validator (statically) and the
    machine, which imports handlers when it starts (so a project built in code cannot slip by).
    """
    if is_async:
        # NOTE: handlers run on the server's worker threads, which have no event loop; awaiting
        # would need one per call. A handler that must await can run asyncio.run(...) itself.
        return (
            f"{ref} is an async def: the host calls handlers as plain functions and would get "
            "a coroutine instead of a result; write it as a plain def (call asyncio.run(...) "
            "inside it if it must await something)"
        )
    for param in params or ():
        if param.kind == "positional_only":
            return (
                f"{ref} has the positional-only parameter '{param.name}'; the host passes "
                "arguments by name: remove the '/'"
            )
        if param.kind in ("var_positional", "var_keyword"):
            stars = "*" if param.kind == "var_positional" else "**"
            return (
                f"{ref} takes {stars}{param.name}, which would always be empty: the host passes "
                "exactly the parameters a handler names; name each one it needs instead "
                f"(like id, ticket) and remove {stars}{param.name}"
            )
    return None


_KINDS: dict[Any, ParamKind] = {
    inspect.Parameter.POSITIONAL_ONLY: "positional_only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "normal",
    inspect.Parameter.KEYWORD_ONLY: "keyword_only",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def params_of(function: Any) -> tuple[Param, ...] | None:
    """The parameters of an imported callable, or None when Python cannot tell them."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    return tuple(
        Param(p.name, _KINDS[p.kind], p.default is not inspect.Parameter.empty)
        for p in signature.parameters.values()
    )


def is_async(function: Any) -> bool:
    """True for an ``async def`` (or async generator) function."""
    return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)


@dataclass
class _Module:
    file: Path
    names: dict[str, tuple[int, tuple[Param, ...] | None, bool]] = field(default_factory=dict)
    star: bool = False


class HandlerIndex:
    """Resolves handler names under ``root``, parsing each module once.

    Args:
        root: The handlers directory.
        import_modules: Also import modules (``--import``) for import errors and exact signatures.
    """

    def __init__(self, root: Path, *, import_modules: bool = False) -> None:
        self.root = root
        self.import_modules = import_modules
        self._modules: dict[str, _Module | HandlerProblem] = {}
        self._imported: dict[str, Any] = {}

    def resolve(self, ref: str) -> Handler:
        """The handler ``ref`` names.

        Raises:
            HandlerProblem: the module or function does not exist, or the module does not parse
                (or import, with ``import_modules``).
        """
        module_name, _, function = ref.partition(":")
        module = self._module(module_name)
        entry = module.names.get(function)
        if entry is None and not module.star:
            public = [n for n in module.names if not n.startswith("_")]
            hint = did_you_mean(function, public)
            fix = hint or " Define it there, or fix the name after the ':'."
            raise HandlerProblem(
                "handler-missing", f"{module.file} has no function '{function}'.{fix}"
            )
        line, params, asynchronous = entry if entry is not None else (1, None, False)
        if self.import_modules:
            params, asynchronous = self._signature(module_name, function, module.file)
        return Handler(ref, module.file, line, params, asynchronous)

    def _module(self, name: str) -> _Module:
        cached = self._modules.get(name)
        if cached is None:
            try:
                cached = _parse(self._find(name))
            except HandlerProblem as problem:
                cached = problem
            self._modules[name] = cached
        if isinstance(cached, HandlerProblem):
            raise cached
        return cached

    def _find(self, name: str) -> Path:
        if not self.root.is_dir():
            raise HandlerProblem(
                "handler-missing",
                f"the handlers directory {self.root} does not exist "
                "(point at it with --handlers DIR)",
            )
        base = self.root.joinpath(*name.split("."))
        for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        prefix, _, last = name.rpartition(".")
        parent = base.parent
        known = []
        if parent.is_dir():
            known = [p.stem for p in parent.glob("*.py") if p.stem != "__init__"] + [
                p.name for p in parent.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
            ]
        hint = did_you_mean(last, known)
        if hint and prefix:
            hint = hint.replace(" '", f" '{prefix}.", 1)
        fix = hint or " Create that file, or fix the module name before the ':'."
        raise HandlerProblem(
            "handler-missing",
            f"no handler module '{name}': expected {base.with_name(base.name + '.py')}.{fix}",
        )

    def _signature(
        self, module_name: str, function: str, file: Path
    ) -> tuple[tuple[Param, ...] | None, bool]:
        if module_name not in self._imported:
            self._imported[module_name] = self._import(module_name)
        module = self._imported[module_name]
        if isinstance(module, HandlerProblem):
            raise module
        target = getattr(module, function, None)
        if target is None or not callable(target):
            what = "has no" if target is None else "has no callable"
            raise HandlerProblem("handler-missing", f"{file} {what} '{function}' once imported")
        return params_of(target), is_async(target)

    def _import(self, name: str) -> Any:
        root = str(self.root.resolve())
        sys.path.insert(0, root)
        try:
            return importlib.import_module(name)
        except BaseException as exc:  # a handler module may raise anything, even SystemExit
            if isinstance(exc, KeyboardInterrupt):
                raise
            return HandlerProblem(
                "handler-import",
                f"importing handler module '{name}' failed: {type(exc).__name__}: {exc}; fix "
                "what the module runs at import time (or move it into the handler)",
            )
        finally:
            sys.path.remove(root)


def _parse(file: Path) -> _Module:
    try:
        # NOTE: bytes, as Python reads a module: a byte-order mark or a coding line is honoured.
        source = file.read_bytes()
        tree = ast.parse(source, filename=str(file))
    except SyntaxError as exc:
        pos = Pos(str(file), exc.lineno or 1, exc.offset or 1)
        raise HandlerProblem(
            "handler-syntax", f"invalid Python: {exc.msg}; fix the syntax at this line", pos
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HandlerProblem(
            "handler-syntax", f"cannot read {file}: {exc}", Pos(str(file), 1, 1)
        ) from None
    module = _Module(file)
    _collect(tree.body, module)
    return module


def _collect(body: list[ast.stmt], module: _Module) -> None:
    # NOTE: module level only, including names bound under `if`/`try`/`with` (conditional
    # definitions); a later binding wins, as it does at run time.
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            asynchronous = isinstance(node, ast.AsyncFunctionDef)
            module.names[node.name] = (node.lineno, _params(node.args), asynchronous)
        elif isinstance(node, ast.ClassDef):
            module.names[node.name] = (node.lineno, None, False)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            params = _params(value.args) if isinstance(value, ast.Lambda) else None
            for target in targets:
                if isinstance(target, ast.Name):
                    module.names[target.id] = (node.lineno, params, False)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                if alias.name == "*":
                    module.star = True
                else:
                    bound = alias.asname or alias.name.split(".")[0]
                    module.names[bound] = (node.lineno, None, False)
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for part in ("body", "orelse", "finalbody"):
                _collect(getattr(node, part, []), module)
            for handler in getattr(node, "handlers", []):
                _collect(handler.body, module)


def _params(args: ast.arguments) -> tuple[Param, ...]:
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    params = [
        Param(
            a.arg, "positional_only" if i < len(args.posonlyargs) else "normal", i >= first_default
        )
        for i, a in enumerate(positional)
    ]
    if args.vararg is not None:
        params.append(Param(args.vararg.arg, "var_positional", True))
    params.extend(
        Param(a.arg, "keyword_only", d is not None)
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    )
    if args.kwarg is not None:
        params.append(Param(args.kwarg.arg, "var_keyword", True))
    return tuple(params)

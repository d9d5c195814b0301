"""Import handler functions from a handlers directory and call them with arguments bound by name.

Handlers are the user's plain Python: ``helpdesk:close_ticket`` is ``handlers/helpdesk.py``,
function ``close_ticket``. Each parameter is filled from the names in scope at that step; ``ctx``
receives the call context; a parameter with a default may be left out. The checker proves all
of this statically, before anything is imported; this module does it for real at start-up.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.errors import HandlerImportError
from host.spec.handlers import is_async, params_of, signature_problem

__all__ = ["Handler", "HandlerImportError", "forget_handlers", "load_handler"]


@dataclass(frozen=True)
class Handler:
    """A handler function with its parameters resolved once, at start-up.

    Attributes:
        call: The ``module:function`` reference, for logs and errors.
        required: Parameters that must come from scope (or ``ctx``).
        optional: Parameters with defaults, passed only when the name is in scope.
    """

    call: str
    function: Callable[..., Any]
    required: tuple[str, ...]
    optional: tuple[str, ...]

    def __call__(self, scope: Mapping[str, Any], ctx: Any) -> Any:
        kwargs: dict[str, Any] = {}
        for name in self.required:
            kwargs[name] = ctx if name == "ctx" else scope[name]
        for name in self.optional:
            if name == "ctx":
                kwargs[name] = ctx
            elif name in scope:
                kwargs[name] = scope[name]
        return self.function(**kwargs)


def _package_for(handlers_dir: Path) -> str:
    """A private package whose ``__path__`` is the handlers directory.

    NOTE: a package per directory (named by a digest of its path) keeps two spec directories in one
    process (tests, several apps) from sharing a module called ``helpdesk``.
    """
    root = handlers_dir.resolve()
    name = "_host_handlers_" + hashlib.sha1(str(root).encode()).hexdigest()[:10]
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(root)]
        sys.modules[name] = package
        # Lets handlers import their sibling modules by plain name, as scripts would.
        if str(root) not in sys.path:
            sys.path.append(str(root))
    return name


def forget_handlers(handlers_dir: Path) -> list[str]:
    """Drop the modules imported from ``handlers_dir``, so the next load imports them afresh.

    A reload must serve the handler files as they are now. Machines compiled before keep the
    functions they hold, so what is being served goes on unchanged; only new loads see the new
    files. Both the directory's private package and sibling modules imported by plain name (a
    handler's ``import helpers``) are dropped.

    Returns:
        The names of the modules dropped.
    """
    root = handlers_dir.resolve()
    package = _package_for(handlers_dir)
    dropped = []
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        # NOTE: a sibling is a top-level module whose file is in the directory itself; the
        # host's own modules never are dropped, even if the directory holds the host.
        sibling = (
            origin is not None
            and "." not in name
            and name != "host"
            and Path(origin).resolve().parent == root
        )
        if name.startswith(package + ".") or sibling:
            del sys.modules[name]
            dropped.append(name)
    importlib.invalidate_caches()
    return dropped


def load_handler(handlers_dir: Path, call: str) -> Handler:
    """Import ``module:function`` from ``handlers_dir`` and resolve its parameters.

    Raises:
        HandlerImportError: the module or function is missing, importing it failed, or it is
            a handler the host cannot call (async, ``*args``, ``**kwargs``, positional-only).
    """
    module_name, _, function_name = call.partition(":")
    if not module_name or not function_name:
        raise HandlerImportError(f"handler {call!r} is not of the form module:function")
    package = _package_for(handlers_dir)
    try:
        module = importlib.import_module(f"{package}.{module_name}")
    except ModuleNotFoundError as exc:
        raise HandlerImportError(
            f"handler {call!r}: no module {module_name!r} under {handlers_dir}"
        ) from exc
    except Exception as exc:  # the user's module raised while importing
        raise HandlerImportError(
            f"handler {call!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    function = getattr(module, function_name, None)
    if not callable(function):
        raise HandlerImportError(
            f"handler {call!r}: {module_name!r} has no function {function_name!r}"
        )
    params = params_of(function)
    if params is None:
        raise HandlerImportError(f"handler {call!r}: Python cannot read its parameters")
    # NOTE: the validator refuses these too, from the source; a project built in code and never
    # validated must not get a handler that returns a coroutine or silently drops arguments.
    problem = signature_problem(call, params, is_async=is_async(function))
    if problem is not None:
        raise HandlerImportError(problem)
    required = tuple(p.name for p in params if not p.has_default)
    optional = tuple(p.name for p in params if p.has_default)
    return Handler(call, function, required, optional)

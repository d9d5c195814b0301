"""What checking a project remembers about the texts it has seen, and its release after.

The checker and the compiler ask the same questions of the same texts (a template's syntax
tree, its names, an output schema's validator), and generated or copied specs repeat them: each
is answered once per distinct text. None of the answers is needed once a project is compiled,
and a worker serving 1,000 tools kept about a megabyte of Jinja syntax trees for nothing; so the
caches are made here, and :func:`release` drops them all when a project is compiled.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

__all__ = ["memo", "one", "release", "remembered"]

F = TypeVar("F", bound=Callable[..., Any])

_CACHES: list[Any] = []


def memo(maxsize: int) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)``, dropped by :func:`release`."""

    def wrap(fn: F) -> F:
        cached = lru_cache(maxsize=maxsize)(fn)
        _CACHES.append(cached)
        return cached  # type: ignore[return-value]

    return wrap


def remembered() -> int:
    """How many answers the caches hold now: none after :func:`release`."""
    return sum(cached.cache_info().currsize for cached in _CACHES)


def release() -> None:
    """Forget every answer remembered while checking and compiling (they are asked again)."""
    for cached in _CACHES:
        cached.cache_clear()


H = TypeVar("H")


@memo(8192)
def one(value: H) -> H:
    """The first value equal to ``value`` seen since the last :func:`release`.

    NOTE: a compiled tool holds a dozen small frozensets (its scopes, each step's names), and
    1,000 tools held 6,000 of only 221 different ones (1.4 MB): equal ones are now one object.
    ``value`` must be hashable and immutable, and equal means equal as a dict key: ``{1}`` and
    ``{True}`` are one, so sets of names (text) only.
    """
    return value

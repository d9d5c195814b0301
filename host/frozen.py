"""Frozen dataclasses that are cheap to make: the values every request builds a dozen of.

A frozen dataclass's own ``__init__`` sets each field through ``object.__setattr__`` (frozen
instances refuse plain assignment): a global lookup, an attribute lookup and a call through a
slot wrapper per field, about three times what the instance costs otherwise. The request path
makes some eighty such fields a plain call (the call, its context, its ledger, the reply) and
twice that an exchange. :func:`quick_init` gives a frozen dataclass an ``__init__`` with the same
signature, defaults and factories that fills the instance's dict directly; everything else the
dataclass made (``__setattr__`` refusing changes, ``__eq__``, ``__hash__``, ``replace``) stays.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

__all__ = ["quick_init"]

T = TypeVar("T")

_SELF = "__quick_self__"
_DICT = "__quick_dict__"


def quick_init(cls: type[T]) -> type[T]:
    """``cls`` (a frozen dataclass, applied above ``@dataclass(frozen=True)``) with a quick
    ``__init__``; a class this does not know how to speed up is returned as it is.

    NOTE: left alone: a class without an instance dict (``slots``), one with ``InitVar``
    parameters (its ``__post_init__`` takes them), and one whose field names clash with the
    generated function's own.
    """
    if not dataclasses.is_dataclass(cls) or "__dict__" not in dir(cls):
        return cls
    fields = dataclasses.fields(cls)
    signature = inspect.signature(cls.__init__)
    params = list(signature.parameters.values())[1:]
    names = [f.name for f in fields if f.init]
    if [p.name for p in params] != names or {_SELF, _DICT} & {f.name for f in fields}:
        return cls
    namespace: dict[str, Any] = {"_HAS_FACTORY": _HAS_FACTORY}
    heads: list[str] = []
    body = [f"    {_DICT} = {_SELF}.__dict__"]
    keyword_only = False
    for field in fields:
        if field.init:
            param = signature.parameters[field.name]
            if param.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only:
                heads.append("*")
                keyword_only = True
            heads.append(_head(param, namespace))
        value = _value(field, namespace)
        if value is not None:
            body.append(f"    {_DICT}[{field.name!r}] = {value}")
    if hasattr(cls, "__post_init__"):
        body.append(f"    {_SELF}.__post_init__()")
    source = f"def __init__({', '.join([_SELF, *heads])}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def _head(param: inspect.Parameter, namespace: dict[str, Any]) -> str:
    """The parameter as the generated signature spells it; its default kept in ``namespace``."""
    if param.default is inspect.Parameter.empty:
        return param.name
    namespace[f"_default_{param.name}"] = param.default
    return f"{param.name}=_default_{param.name}"


def _value(field: dataclasses.Field[Any], namespace: dict[str, Any]) -> str | None:
    """The expression the field's value is set from, as the dataclass's own ``__init__`` sets it
    (None: it sets none)."""
    factory = field.default_factory
    if factory is not dataclasses.MISSING:
        namespace[f"_factory_{field.name}"] = factory
        made = f"_factory_{field.name}()"
        return f"{made} if {field.name} is _HAS_FACTORY else {field.name}" if field.init else made
    # NOTE: a field outside __init__ with a plain default is read from the class, as the
    # dataclass leaves it.
    return field.name if field.init else None


def _has_factory() -> object:
    """The default the dataclass's signature shows for a field made by its factory."""

    @dataclasses.dataclass
    class Probe:
        value: list[int] = dataclasses.field(default_factory=list)

    default: object = inspect.signature(Probe.__init__).parameters["value"].default
    return default


_HAS_FACTORY = _has_factory()

"""quick_init: a frozen dataclass made the same way, only cheaper."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from host.frozen import quick_init


def _declared() -> type[Any]:
    @dataclasses.dataclass(frozen=True)
    class Declared:
        name: str
        items: list[int] = dataclasses.field(default_factory=list)
        count: int = 3
        fixed: int = dataclasses.field(default=5, init=False)
        made: dict[str, Any] = dataclasses.field(default_factory=dict, init=False)
        flag: bool = dataclasses.field(default=False, kw_only=True)

    return Declared


Plain = _declared()
Quick = quick_init(_declared())


def _made(cls: type[Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    return dict(vars(cls(*args, **kwargs)))


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(("a",), {}), (("a", [1]), {"count": 4}), ((), {"name": "b", "flag": True, "items": []})],
)
def test_same_values_as_the_dataclass_init(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    assert _made(Quick, *args, **kwargs) == _made(Plain, *args, **kwargs)
    assert Quick.__init__ is not Plain.__init__


def test_same_signature_and_errors() -> None:
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))
    with pytest.raises(TypeError):
        Quick()
    with pytest.raises(TypeError):
        Quick("a", [], 3, True)  # NOTE: flag is keyword-only


def test_factories_make_a_new_value_each_time() -> None:
    one, two = Quick("a"), Quick("b")
    assert one.items == two.items == [] and one.items is not two.items
    assert one.made is not two.made


def test_still_frozen_and_replaceable() -> None:
    value = Quick("a", [1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.name = "b"  # type: ignore[misc]
    changed = dataclasses.replace(value, count=9)
    assert (changed.name, changed.items, changed.count) == ("a", [1], 9)
    assert value == Quick("a", [1]) and value != changed


def test_post_init_runs() -> None:
    seen: list[str] = []

    @quick_init
    @dataclasses.dataclass(frozen=True)
    class Checked:
        name: str

        def __post_init__(self) -> None:
            seen.append(self.name)

    Checked("x")
    assert seen == ["x"]


def test_classes_it_cannot_speed_up_are_left_alone() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        name: str

    @dataclasses.dataclass(frozen=True)
    class WithInitVar:
        name: str
        extra: dataclasses.InitVar[int] = 0

        def __post_init__(self, extra: int) -> None:
            object.__setattr__(self, "name", self.name * extra)

    for cls in (Slotted, WithInitVar):
        init = cls.__init__
        assert quick_init(cls) is cls and cls.__init__ is init
    assert WithInitVar("ab", 2).name == "abab"

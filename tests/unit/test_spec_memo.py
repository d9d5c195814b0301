"""What checking and compiling remember is dropped once a project is compiled; repeats share."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

from host.machine import compile_project
from host.spec import load_project, memo, templates
from host.spec.yaml.load import load_text

ROOT = Path(__file__).resolve().parents[2]


def test_compiling_a_project_drops_every_syntax_tree_the_check_kept() -> None:
    project = load_project(ROOT / "specs", ROOT / "handlers")
    templates.names(f"{{{{ x }}}} {uuid.uuid4().hex}")
    assert memo.remembered() > 0
    machines = compile_project(project)
    assert memo.remembered() == 0
    # NOTE: the machines still render: nothing they hold was in those caches.
    assert machines and all(m.describe()["name"] == name for name, m in machines.items())


def test_release_empties_every_cache_made_with_memo() -> None:
    calls: list[str] = []

    @memo.memo(8)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    assert shout("a") == shout("a") == "A"
    assert calls == ["a"]
    memo.release()
    assert shout("a") == "A"
    assert calls == ["a", "a"]


def test_one_gives_the_first_of_equal_values_until_released() -> None:
    first = frozenset({"id", uuid.uuid4().hex})
    again = frozenset(set(first))
    assert again is not first
    assert memo.one(first) is first
    assert memo.one(again) is first
    memo.release()
    assert memo.one(again) is again


def test_tools_with_the_same_fields_share_one_set_of_them() -> None:
    machines = compile_project(load_project(ROOT / "specs", ROOT / "handlers"))
    by_fields: dict[frozenset[str], frozenset[str]] = {}
    for machine in machines.values():
        seen = by_fields.setdefault(machine._fields, machine._fields)
        assert seen is machine._fields, f"{machine.name}: an equal set of fields is another object"
    assert len(by_fields) < len(machines), "the example's tools all differ; the test needs repeats"


def test_a_specs_keys_and_short_texts_are_one_object_however_often_written() -> None:
    word = f"w{uuid.uuid4().hex}"
    long = "x" * 200 + uuid.uuid4().hex
    text = f"a:\n  {word}: one\n  t: {long}\nb:\n  {word}: one\n  t: {long}\n"
    [doc], problems = load_text(text, "twice.yaml")
    assert not problems
    a, b = doc.data["a"], doc.data["b"]
    [key_a] = [k for k in a if k == word]
    [key_b] = [k for k in b if k == word]
    assert key_a is key_b is sys.intern(word)
    assert a[word] is b[word]
    # NOTE: a long text (a description, say) is seldom written twice: not interned.
    assert a["t"] == b["t"] and a["t"] is not b["t"]

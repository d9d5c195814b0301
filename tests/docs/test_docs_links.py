"""Every relative link of README.md and docs/ leads to a file, and to a heading where it names one.

Anchors are made the way GitHub makes them from headings: lower case, punctuation dropped, spaces
as '-', and '-1', '-2', ... for a heading that repeats. Fenced blocks are left out on both sides:
a ``#`` comment in a shell block is no heading.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def prose(page: Path) -> str:
    """The page without its fenced blocks."""
    return re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)


def anchors(page: Path) -> set[str]:
    found: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", prose(page), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = found.get(slug)
        found[slug] = 0 if count is None else count + 1
        if count is not None:
            found[f"{slug}-{count + 1}"] = 0
    return set(found)


def test_the_manual_has_its_pages() -> None:
    names = {page.name for page in PAGES}
    for name in ["writing-specs.md", "testing-specs.md", "rules.md", "connecting-clients.md"]:
        assert name in names, name
    for name in ["operating.md", "contributing.md", "conformance.md", "benchmarks.md"]:
        assert name in names, name


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_links_lead_to_a_file_and_a_heading(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto: ...: not ours to check
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor:
            assert linked.suffix == ".md", f"{page.name}: {target}"
            assert anchor in anchors(linked), f"{page.name}: {target}"

"""Every constant in experiments/settings/reference.py names its source (issue 24): the paper and where in it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import experiments.settings.reference as reference

PAPER = re.compile(r"Chien|Zhu|Pumma|Nelson|Ho-Von|DLIO's config")
WHERE = re.compile(r"\b(Sec(tion)?s?\.? ?[0-9IVX]|Table|Fig|Eq|Abstract|Listing|histogram|collectl|fio|config)")


def source_notes(text: str) -> dict[str, str]:
    """{constant: the comments of its paragraph}: the public UPPER_CASE names assigned at module
    level, each with the comment lines of the block it sits in (the lines above it up to the
    previous blank line, and the comments on its own lines)."""
    lines = text.splitlines()
    out = {}
    for node in ast.parse(text).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        names = [n for n in names if n.isupper() and not n.startswith("_")]
        if not names:
            continue
        first, last = node.lineno - 1, node.end_lineno - 1
        while first > 0 and lines[first - 1].strip():
            first -= 1
        block = lines[first:last + 1]
        comments = " ".join(ln.split("#", 1)[1] for ln in block if "#" in ln)
        for n in names:
            out[n] = comments
    return out


def missing_sources(text: str) -> list[str]:
    """The constants whose notes name no paper (or DLIO's config) or no place in it."""
    return [n for n, c in source_notes(text).items() if not (PAPER.search(c) and WHERE.search(c))]


def test_every_constant_names_its_source():
    text = Path(reference.__file__).read_text()
    notes = source_notes(text)
    assert len(notes) >= 30          # the parser found the module's constants
    assert missing_sources(text) == []


@pytest.mark.parametrize("snippet", [
    "X = 1\n",                                             # no comment at all
    "# a number we like\nX = 1\n",                         # a comment without a source
    "# Ho-Von 2023\nX = 1\n",                              # a paper but not where in it
    "# Ho-Von 2023, Sec 5.1.3\nY = 2\n\nX = 1  # see above\n",   # the note belongs to another block
])
def test_a_constant_without_a_source_note_fails(snippet):
    assert "X" in missing_sources(snippet)


def test_a_constant_with_its_source_passes():
    assert missing_sources("# Ho-Von 2023, Sec 5.1.2: evaluations 8x epochs.\nX = 8\n") == []
    assert missing_sources("X = {  # DLIO's config, unet3d.yaml\n  'a': 1}\n") == []


def test_grid_ranks_are_the_ones_the_text_names():
    assert reference.HOVON_GRID_RANKS == [1, 4, 8]

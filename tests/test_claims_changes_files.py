"""The reasons files of the claims before/after check (tests/claims_changes/*.yaml) name each
claim once: YAML keeps the last of two equal keys silently, so a second entry for a claim would
drop the first one's reasons (two such pairs were found by hand on 2026-11-29)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

FILES = sorted((Path(__file__).resolve().parent / "claims_changes").glob("*.yaml"))


class _Strict(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with a key twice."""


def _mapping(loader, node, deep=False):
    keys = [loader.construct_object(k, deep=True) for k, _ in node.value]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise yaml.constructor.ConstructorError(None, None, f"key(s) {twice} given twice", node.start_mark)
    return loader.construct_mapping_plain(node, deep)


_Strict.construct_mapping_plain = yaml.SafeLoader.construct_mapping
_Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_claim_has_one_entry(path):
    yaml.load(path.read_text(), Loader=_Strict)


def test_the_strict_loader_finds_a_key_given_twice():
    with pytest.raises(yaml.constructor.ConstructorError, match="given twice"):
        yaml.load("a:\n  x: 1\na:\n  y: 2\n", Loader=_Strict)

"""Sections of ``params.yaml`` shared by several stages: the seed, the ImageNet size mix, figures."""

from __future__ import annotations

import re

from pydantic import Field, RootModel, field_validator

from .config import Section

_BSSPLIT_PART = re.compile(r"^(\d+)([KMG]?)/(\d+)$", re.IGNORECASE)
_UNIT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def check_counts(v: list[int], what: str, lo: int = 1, hi: int = 1024) -> list[int]:
    """Body of a validator for a list of counts (threads, processes, batch sizes, depths):
    every value must lie in [lo, hi]; the message names what is counted and the bad values."""
    bad = [x for x in v if x < lo or x > hi]
    if bad:
        raise ValueError(f"every {what} must be between {lo} and {hi}; got {bad}")
    return v


class Seed(RootModel[int]):
    """The project seed: every generated data set and every shuffle derives from it."""

    root: int = Field(ge=0)


def parse_bssplit(text: str) -> list[tuple[int, int]]:
    """fio ``bssplit`` string -> [(block size in bytes, weight in percent)]."""
    parts = []
    for item in text.split(":"):
        m = _BSSPLIT_PART.match(item.strip())
        if not m:
            raise ValueError(f"{item!r} is not SIZE/PERCENT (for example 64K/38)")
        parts.append((int(m.group(1)) * _UNIT[m.group(2).upper()], int(m.group(3))))
    if sum(w for _, w in parts) != 100:
        raise ValueError(f"weights add up to {sum(w for _, w in parts)}, must add up to 100")
    return parts


class SizeMix(RootModel[str]):
    """The ImageNet file-size mix as a fio ``bssplit`` (from the blog); shared by fio and the data."""

    root: str

    @field_validator("root")
    @classmethod
    def _check(cls, v: str) -> str:
        parse_bssplit(v)
        return v


class FigureConfig(Section):
    """How report stages draw. Only report stages read this section."""

    dpi: int = Field(150, ge=50, le=600)
    formats: list[str] = ["png", "svg"]
    context: str = Field("notebook", pattern="^(paper|notebook|talk|poster)$")

    @field_validator("formats")
    @classmethod
    def _formats(cls, v: list[str]) -> list[str]:
        bad = [f for f in v if f not in ("png", "svg", "pdf")]
        if bad or not v:
            raise ValueError(f"formats must be a non-empty subset of png, svg, pdf; got {v}")
        return v

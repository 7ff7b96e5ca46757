"""The PyTorch pack's facts (``torch.toml`` beside this module), typed and looked up."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Annotated, Literal

from pydantic import Field

from envforge.knowledge.models import Range, Row, in_range
from envforge.packs.pitfalls import PitfallRow
from envforge.spec import Frozen, Platform

# a kernel image ("sm_70") or PTX ("compute_50") of a CUDA fatbin
Arch = Annotated[str, Field(pattern=r"^(sm|compute)_\d{2,3}$")]


class NameRow(Row):
    index: Literal["pypi", "conda"]
    name: str
    package: Literal["torch", "torchvision"]


class PlaceholderRow(Row):
    index: Literal["pypi"]
    name: str
    versions: str
    seen: str
    fix: str


class PairRow(Row):
    torch: Range
    torchvision: Range


class PypiPlatformsRow(Row):
    torch: Range
    platforms: tuple[Platform, ...] = Field(min_length=1)


class WheelRow(Row):
    platform: Platform
    torch: Range
    python: Range
    cuda: str = Field(pattern=r"^\d+\.\d+(\.\d+)?$")
    library: str
    arches: tuple[Arch, ...] = Field(min_length=1)
    ptx: tuple[Arch, ...] = ()


class TorchFile(Frozen):
    names: tuple[NameRow, ...]
    placeholders: tuple[PlaceholderRow, ...]
    torchvision: tuple[PairRow, ...]
    pypi_platforms: tuple[PypiPlatformsRow, ...]
    wheels: tuple[WheelRow, ...]
    pitfalls: tuple[PitfallRow, ...]


KNOWLEDGE_FILE = "torch"


@functools.cache
def torch_knowledge() -> TorchFile:
    """Every PyTorch fact, validated; a malformed row is a bug in the package and raises."""
    text = resources.files(__package__).joinpath(f"{KNOWLEDGE_FILE}.toml").read_text("utf-8")
    return TorchFile.model_validate(tomllib.loads(text))


def pairing(torch: str) -> PairRow | None:
    """The torchvision releases built for this torch release, where the table names it."""
    return next((row for row in torch_knowledge().torchvision if in_range(torch, row.torch)),
                None)


def pypi_platforms(torch: str) -> PypiPlatformsRow | None:
    return next((row for row in torch_knowledge().pypi_platforms
                 if in_range(torch, row.torch)), None)


def wheel(torch: str, platform: Platform) -> WheelRow | None:
    """The PyPI wheel's CUDA runtime and kernel architectures for this release, where
    envforge has read them for ``platform``."""
    return next((row for row in torch_knowledge().wheels
                 if row.platform == platform and in_range(torch, row.torch)), None)


def placeholder(name: str) -> PlaceholderRow | None:
    return next((row for row in torch_knowledge().placeholders if row.name == name), None)


def stack_names() -> dict[str, str]:
    """Every index's name of a PyTorch distribution -> the lock's (PyPI's) name."""
    return {row.name: row.package for row in torch_knowledge().names}

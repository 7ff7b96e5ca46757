"""``[torch]``: every key has a default, unknown keys and out-of-range values are refused
naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.errors import SpecError
from envforge.packs.torch.section import SPEC_KEYS, TorchSection, torch_section
from envforge.spec import parse_spec
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
SPEC = (REPO / "specs" / "torch14-cpu.toml").read_text(encoding="utf-8")


def test_the_spec_mounts_its_section() -> None:
    section = torch_section(parse_spec(SPEC, source="t.toml",
                                       registry=REGISTRY).for_platform("linux-64"))
    assert section == TorchSection(threads=2, dataloader_workers=2)
    assert {f"torch.{key}" for key in TorchSection.model_fields} == set(SPEC_KEYS)


@pytest.mark.parametrize(("old", "new", "error"), [
    ("threads = 2", "threads = 0", "t.toml:23: torch.threads: Input should be greater"),
    ("threads = 2", "threads = 257", "t.toml:23: torch.threads: Input should be less"),
    ("dataloader_workers = 2", "dataloader_workers = 0", "t.toml:25: torch.dataloader_workers"),
    ("seed = 0\n", "seed = -1\n", "t.toml:24: torch.seed"),
    ('device = "cpu"', 'device = "rocm"', "t.toml:21: torch.device"),
    ("seed = 0\n", "seeds = 0\n", "t.toml:24: torch.seeds: unknown key"),
])
def test_bad_values_name_the_line(old: str, new: str, error: str) -> None:
    assert old in SPEC
    with pytest.raises(SpecError) as caught:
        parse_spec(SPEC.replace(old, new, 1), source="t.toml", registry=REGISTRY)
    assert str(caught.value).startswith(error)

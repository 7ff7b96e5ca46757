"""The TOML files themselves: every row names a source, and the files agree with each other."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from envforge.knowledge import (
    KNOWLEDGE_FILES,
    cudnn_archive_layout,
    cudnn_library_name,
    cudnn_version_code,
    knowledge,
    knowledge_file,
)
from tests.testing.packs import REGISTRY

# each pack's files, and the facts the packs share (envforge/packs/shared/)
PACK_FILES = {**{name: f"envforge.packs.{pack.name}" for pack in REGISTRY
                 for name in pack.knowledge}, "distributions": "envforge.packs.shared"}


def _raw(name: str) -> dict[str, Any]:
    package = PACK_FILES.get(name, "envforge.knowledge")
    return tomllib.loads(knowledge_file(name, package).read_text(encoding="utf-8"))


def _rows(name: str) -> list[tuple[str, dict[str, Any]]]:
    rows: list[tuple[str, dict[str, Any]]] = []
    for table, body in _raw(name).items():
        if isinstance(body, list):
            rows += [(f"{name}.{table}[{i}]", row) for i, row in enumerate(body)]
        else:
            rows.append((f"{name}.{table}", body))
    return rows


@pytest.mark.parametrize("name", [*KNOWLEDGE_FILES, *PACK_FILES, "virtual_packages"])
def test_every_row_names_a_source(name: str) -> None:
    rows = _rows(name)
    assert rows
    missing = [where for where, row in rows if not str(row.get("source", "")).strip()]
    assert missing == []


def test_every_file_loads_into_the_typed_models() -> None:
    loaded = knowledge()
    assert {name for name in type(loaded).model_fields} == set(KNOWLEDGE_FILES)
    assert len(loaded.cuda.drivers) == 29


def test_inferred_and_observed_rows_say_so() -> None:
    k = knowledge()
    carried = next(r for r in k.cuda.compute_capability if r.cuda == "11.2")
    assert "*inferred*" in carried.source


def test_cudnn_version_code_matches_the_reported_example() -> None:
    for row in knowledge().cudnn.version_codes:
        assert cudnn_version_code(row.cudnn) == row.code
    assert cudnn_version_code("7.6.5.32") == 7605
    assert cudnn_version_code("8.0") == 8000


def test_cudnn_archive_layout_holds_the_library_name() -> None:
    layout = cudnn_archive_layout("7.6.5.32", "win-64")
    library = cudnn_library_name("7.6.5.32", "win-64")
    assert layout is not None and library is not None
    assert f"cuda/bin/{library.value}" in layout.members
    linux = cudnn_archive_layout("7.6.5", "linux-64")
    assert linux is not None and linux.format == "tgz"
    assert "cuda/include/cudnn.h" in linux.members
    assert cudnn_archive_layout("8.0.5", "linux-64") is None


def test_artifact_rows_are_consistent() -> None:
    artifacts = knowledge().artifacts.artifacts
    assert len({a.sha256 for a in artifacts}) == len(artifacts)
    for a in artifacts:
        assert a.version in a.filename
        assert a.url is None or a.url.startswith("https://")
        if a.url is not None and not a.login_required:
            assert a.url.endswith(a.filename)
    assert all(a.login_required for a in artifacts if a.role == "cudnn")

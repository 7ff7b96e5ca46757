"""The spec reference and JSON Schema match the models; every key is documented; the
committed specs use only keys the schema knows."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from envforge import specdoc
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[1]


def test_committed_reference_and_schema_are_current() -> None:
    assert specdoc.write(REPO, REGISTRY, check=True) == 0


def _keys(model: type[BaseModel], prefix: str) -> set[str]:
    found = set()
    for name, field in model.model_fields.items():
        key = f"{prefix}.{field.alias or name}"
        found.add(key)
        nested = [a for a in specdoc._args(field.annotation)
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        if nested:
            found |= _keys(nested[0], key)
    return found


def test_every_key_is_documented_and_no_entry_is_stale() -> None:
    keys = set()
    for section, (model, _) in specdoc.sections(REGISTRY).items():
        keys |= _keys(model, section)
    assert sorted(keys - set(specdoc.keys(REGISTRY))) == []
    assert sorted(set(specdoc.keys(REGISTRY)) - keys) == []


def _check(data: dict[str, Any], schema: dict[str, Any], defs: dict[str, Any],
           where: str) -> None:
    if "$ref" in schema:
        schema = defs[schema["$ref"].removeprefix("#/$defs/")]
    properties = schema.get("properties", {})
    for key, value in data.items():
        assert key in properties, f"{where}.{key} is not in the schema"
        if isinstance(value, dict):
            _check(value, properties[key], defs, f"{where}.{key}")


@pytest.mark.parametrize("spec", sorted((REPO / "specs").glob("*.toml")), ids=lambda p: p.name)
def test_committed_specs_use_only_known_keys(spec: Path) -> None:
    schema = specdoc.json_schema(REGISTRY)
    _check(tomllib.loads(spec.read_text()), schema, schema["$defs"], spec.name)


def test_an_unknown_key_is_caught_by_the_walk() -> None:
    schema = specdoc.json_schema(REGISTRY)
    with pytest.raises(AssertionError, match=r"theano\.cnmem"):
        _check({"theano": {"cnmem": 1}}, schema, schema["$defs"], "x")
    with pytest.raises(AssertionError, match=r"platform\.win-64\.cnmem"):
        _check({"theano": {"platform": {"win-64": {"cnmem": 1}}}}, schema, schema["$defs"],
               "x")


def test_the_pre_commit_hook_runs_lock_check(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    """The hook's entry passes on a fresh spec and lock and fails (3) once the spec changes
    (theano-cuda102 has no lock here: conda channels are unreachable)."""
    import re
    import shutil

    from envforge.cli import main

    text = (REPO / ".pre-commit-hooks.yaml").read_text()
    entry = re.search(r"^\s*entry:\s*(.+)$", text, re.MULTILINE)
    assert entry is not None and re.search(r"^\s*pass_filenames:\s*false$", text, re.MULTILINE)
    argv = entry.group(1).split()
    assert argv[0] == "envforge"
    for folder, name in (("specs", "theano-cpu.toml"), ("locks", "theano-cpu.lock")):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / folder / name, tmp_path / folder / name)
    monkeypatch.chdir(tmp_path)
    assert main(argv[1:]) == 0
    spec = tmp_path / "specs" / "theano-cpu.toml"
    spec.write_text(spec.read_text().replace('description = "', 'description = "changed '))
    assert main(argv[1:]) == 3


def test_the_writer_parses_its_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` prints usage and writes nothing (an earlier main took it for ROOT and
    created a folder named ``--help``)."""
    from envforge.app import specdoc as app_specdoc

    with pytest.raises(SystemExit) as stop:
        app_specdoc.main(["--help"])
    assert stop.value.code == 0 and "--check" in capsys.readouterr().out
    assert not Path("--help").exists()
    assert app_specdoc.main([str(tmp_path), "--check"]) == 1
    assert app_specdoc.main([str(tmp_path)]) == 0
    assert app_specdoc.main([str(tmp_path), "--check"]) == 0

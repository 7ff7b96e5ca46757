"""Keras's pitfalls refused at lock time, and a back-end the spec does not mount."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.compat import check_platform_spec
from envforge.errors import CompatibilityError
from envforge.lockfile import load_lock
from envforge.packs.keras.expect import expectations
from envforge.spec import load_spec, parse_spec

REPO = Path(__file__).resolve().parents[3]
CPU = (REPO / "specs" / "tf1-keras-cpu.toml").read_text(encoding="utf-8")
THEANO = (REPO / "specs" / "keras-theano-cpu.toml").read_text(encoding="utf-8")


def _conflicts(text: str) -> list[tuple[str, str, str]]:
    pspec = parse_spec(text, source="t.toml").for_platform("win-64")
    return [(c.rule, c.message, c.fix) for c in check_platform_spec(pspec)]


@pytest.mark.parametrize("text", [CPU, THEANO])
def test_h5py_3_with_keras_2_3_is_refused(text: str) -> None:
    [(rule, message, fix)] = _conflicts(text.replace('"h5py<3"', '"h5py>=3"'))
    assert rule == "keras2-h5py3"
    assert message.startswith("pypi keras==2.3.1 with pypi h5py>=3:")
    assert "AttributeError: 'str' object has no attribute 'decode'" in message
    assert fix.startswith('pin "h5py<3"')


def test_a_backend_the_spec_does_not_mount() -> None:
    text = CPU.replace('backend = "tensorflow"', 'backend = "theano"')
    [(rule, message, _)] = _conflicts(text)
    assert rule == "keras-backend" and "no [theano] section" in message


def test_a_resolved_h5py_3_is_refused() -> None:
    pspec = load_spec(REPO / "specs" / "keras-theano-cpu.toml").for_platform("linux-64")
    versions = dict(load_lock(REPO / "locks" / "keras-theano-cpu.lock")
                    .platforms["linux-64"].expect.versions)
    assert expectations(pspec, versions).backend == "theano"
    with pytest.raises(CompatibilityError, match=r"resolved keras 2\.3\.1 with h5py 3\.8\.0"):
        expectations(pspec, {**versions, "h5py": "3.8.0"})

"""TensorFlow 1.15's pitfalls refused at lock time, from the spec's pins and from the
resolved versions, with the message users would see and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.compat import check_platform_spec, ensure_compatible
from envforge.errors import CompatibilityError
from envforge.lockfile import load_lock
from envforge.packs.tensorflow.expect import expectations
from envforge.spec import load_spec, parse_spec

REPO = Path(__file__).resolve().parents[3]
CPU = (REPO / "specs" / "tf1-keras-cpu.toml").read_text(encoding="utf-8")
GPU = (REPO / "specs" / "tf1-gpu-cuda100.toml").read_text(encoding="utf-8")


def _rules(text: str, platform: str = "linux-64") -> list[tuple[str, str, str]]:
    pspec = parse_spec(text, source="specs/x.toml").for_platform(platform)  # type: ignore[arg-type]
    return [(c.rule, c.message, c.fix) for c in check_platform_spec(pspec)]


@pytest.mark.parametrize("name", ["tf1-keras-cpu", "tf1-gpu-cuda100", "keras-theano-cpu"])
def test_the_committed_specs_have_no_conflict(name: str) -> None:
    ensure_compatible(load_spec(REPO / "specs" / f"{name}.toml"))


def test_protobuf_4_is_refused_with_the_message_users_see() -> None:
    [(rule, message, fix)] = _rules(CPU.replace('"protobuf<4"', '"protobuf>=4"'))
    assert rule == "tf1-protobuf4"
    assert message.startswith("pypi tensorflow==1.15.5 with pypi protobuf>=4:")
    assert "TypeError: Descriptors cannot not be created directly" in message
    assert fix.startswith('pin "protobuf<4"')


def test_the_refusal_is_one_line_naming_the_spec() -> None:
    spec = parse_spec(CPU.replace('"protobuf<4"', '"protobuf==4.21.0"'),
                      source="specs/tf1-keras-cpu.toml")
    with pytest.raises(CompatibilityError) as error:
        ensure_compatible(spec)
    text = str(error.value)
    line = next(n for n, row in enumerate(CPU.splitlines(), 1) if row.startswith("packages"))
    assert "\n" not in text
    assert text.startswith(f"specs/tf1-keras-cpu.toml:{line}: pypi.packages: linux-64: ")
    assert "(source: https://developers.google.com/protocol-buffers" in text


@pytest.mark.parametrize(("old", "new", "rule"), [
    ('"protobuf<4"', '"protobuf<4", "gast==0.3.3"', "tf1-gast"),
    ('version = "3.7"', 'version = "3.8"', "tf1-python"),
    ('"protobuf<4"', '"protobuf<4", "gast==0.2.1"', "tf1-gast"),
])
def test_cpu_pitfalls(old: str, new: str, rule: str) -> None:
    assert [r for r, _, _ in _rules(CPU.replace(old, new))] == [rule]


@pytest.mark.parametrize(("old", "new", "rule"), [
    ('[cuda]\nversion = "10.0"', '[cuda]\nversion = "10.2"', "tf1-cuda"),
    ('[cuda]\nversion = "10.0"', '[cuda]\nversion = "9.2"', "tf1-cuda"),
    ('[cuda]\nversion = "10.0"',
     '[cuda]\nversion = "10.0"\n\n[cudnn]\nversion = "8.0.5"\narchive = "c.tgz"\n'
     'sha256 = "' + "0" * 64 + '"', "tf1-cudnn"),
])
def test_gpu_pitfalls(old: str, new: str, rule: str) -> None:
    found = [r for r, _, _ in _rules(GPU.replace(old, new))]
    assert rule in found
    if rule == "tf1-cuda":
        message = next(m for r, m, _ in _rules(GPU.replace(old, new)) if r == rule)
        assert "libcudart.so.10.0" in message and "cudart64_100.dll" in message


def test_a_minimum_cuda_is_not_refused_from_the_spec_alone() -> None:
    assert _rules(GPU.replace('[cuda]\nversion = "10.0"', '[cuda]\nversion = ">=10.0"')) == []


def test_kernels_the_probe_cannot_run_are_refused() -> None:
    [(rule, message, _)] = _rules(CPU.replace('kernels = ["elementwise", "gemm", "conv"]',
                                              'kernels = ["gemm", "scan"]'))
    assert rule == "tf-kernels" and "scan" in message


def test_resolved_versions_are_judged_too() -> None:
    """An unpinned protobuf resolves to 4.x: lock refuses it as it refuses a pin."""
    pspec = load_spec(REPO / "specs" / "tf1-keras-cpu.toml").for_platform("linux-64")
    versions = dict(load_lock(REPO / "locks" / "tf1-keras-cpu.lock")
                    .platforms["linux-64"].expect.versions)
    assert expectations(pspec, versions).device == "cpu"
    with pytest.raises(CompatibilityError, match=r"^linux-64: resolved tensorflow 1\.15\.5 "
                                                 r"with protobuf 4\.24\.4: "):
        expectations(pspec, {**versions, "protobuf": "4.24.4"})

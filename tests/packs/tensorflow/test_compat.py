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
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
CPU = (REPO / "specs" / "tf1-keras-cpu.toml").read_text(encoding="utf-8")
GPU = (REPO / "specs" / "tf1-gpu-cuda100.toml").read_text(encoding="utf-8")


def _rules(text: str, platform: str = "linux-64") -> list[tuple[str, str, str]]:
    pspec = parse_spec(text, source="specs/x.toml", registry=REGISTRY).for_platform(platform)  # type: ignore[arg-type]
    return [(c.rule, c.message, c.fix) for c in check_platform_spec(pspec, REGISTRY)]


@pytest.mark.parametrize("name", ["tf1-keras-cpu", "tf1-gpu-cuda100", "keras-theano-cpu",
                                  "tf114-keras22-cpu", "tf113-keras21-cpu"])
def test_the_committed_specs_have_no_conflict(name: str) -> None:
    ensure_compatible(load_spec(REPO / "specs" / f"{name}.toml", REGISTRY), REGISTRY)


def test_protobuf_4_is_refused_with_the_message_users_see() -> None:
    [(rule, message, fix)] = _rules(CPU.replace('"protobuf<4"', '"protobuf>=4"'))
    assert rule == "tf1-protobuf4"
    assert message.startswith("pypi tensorflow==1.15.5 with pypi protobuf>=4:")
    assert "TypeError: Descriptors cannot not be created directly" in message
    assert fix.startswith('pin "protobuf<4"')


@pytest.mark.parametrize("spec", ["tf114-keras22-cpu", "tf113-keras21-cpu"])
def test_protobuf_4_is_refused_for_tensorflow_1_13_and_1_14_too(spec: str) -> None:
    text = (REPO / "specs" / f"{spec}.toml").read_text(encoding="utf-8")
    assert [r for r, _, _ in _rules(text.replace('"protobuf<4"', '"protobuf>=4"'))] == [
        "tf1-protobuf4"]


def test_the_refusal_is_one_line_naming_the_spec() -> None:
    spec = parse_spec(CPU.replace('"protobuf<4"', '"protobuf==4.21.0"'),
                      source="specs/tf1-keras-cpu.toml", registry=REGISTRY)
    with pytest.raises(CompatibilityError) as error:
        ensure_compatible(spec, REGISTRY)
    text = str(error.value)
    line = next(n for n, row in enumerate(CPU.splitlines(), 1) if row.startswith("packages"))
    assert "\n" not in text
    assert text.startswith(f"specs/tf1-keras-cpu.toml:{line}: pypi.packages: linux-64: ")
    assert "(source: https://developers.google.com/protocol-buffers" in text


@pytest.mark.parametrize(("old", "new", "rule"), [
    ('"protobuf<4"', '"protobuf<4", "gast==0.3.3"', "tf1-gast"),
    ('version = "3.7"', 'version = "3.8"', "tf1-python"),
    ('"protobuf<4"', '"protobuf<4", "gast==0.2.1"', "tf1-gast"),
    ('version = "3.7"', 'version = "3.5"', "tf1-python"),  # 1.15.5: cp36 and cp37 only
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


def test_python_3_5_is_refused_for_1_15_5_only() -> None:
    [(_, message, fix)] = _rules(CPU.replace('version = "3.7"', 'version = "3.5"'))
    assert "1.15.5 has wheels for Python 3.6 and 3.7 only" in message and "1.15.4" in fix
    assert _rules(CPU.replace('version = "3.7"', 'version = "3.5"')
                  .replace("tensorflow==1.15.5", "tensorflow==1.15.4")) == []


@pytest.mark.parametrize(("cudnn", "refused"), [("7.4.2", True), ("7.5.1", True),
                                                ("7.6.0", False), ("7.6.5", False)])
def test_cudnn_older_than_the_wheels_were_compiled_with(cudnn: str, refused: bool) -> None:
    """TensorFlow 1.15's GPU wheels were compiled with cuDNN 7.6.0: 7.4 (the install table's)
    and 7.5 fail at start-up; the tested row says 7.6 too."""
    from envforge.knowledge.models import in_range
    from envforge.packs.tensorflow.knowledge import build_configuration

    text = GPU.replace('[cuda]\nversion = "10.0"',
                       f'[cuda]\nversion = "10.0"\n\n[cudnn]\nversion = "{cudnn}"\n'
                       f'archive = "c.tgz"\nsha256 = "{"0" * 64}"')
    found = [(r, m) for r, m, _ in _rules(text) if r == "tf1-cudnn"]
    assert bool(found) == refused
    if refused:
        assert "but source was compiled with: 7.6.0" in found[0][1]
    row = build_configuration("1.15.5")
    assert row is not None and in_range(cudnn, row.cudnn) != refused


def test_tensorflow_2_under_the_tf1_pack_is_refused() -> None:
    [(rule, message, fix)] = _rules(CPU.replace("tensorflow==1.15.5", "tensorflow==2.11.0")
                                    .replace('"keras==2.3.1", ', ""))
    assert rule == "tf2-in-tf1-pack"
    assert message.startswith("pypi tensorflow==2.11.0: [tensorflow] is the TensorFlow 1.x pack")
    assert "AttributeError: module 'tensorflow' has no attribute 'Session'" in message
    assert fix.startswith('pin "tensorflow<2"')
    pspec = load_spec(REPO / "specs" / "tf1-keras-cpu.toml", REGISTRY).for_platform("linux-64")
    with pytest.raises(CompatibilityError, match=r"resolved tensorflow 2\.11\.0: "):
        expectations(pspec, {"tensorflow": "2.11.0"})


@pytest.mark.parametrize(("pin", "refused"), [
    ("tensorflow==1.15.5", True), ("tensorflow==1.14.0", True), ("tensorflow==1.15.0", False),
    ("tensorflow-gpu==1.15.5", False), ("tensorflow-gpu==1.14.0", False),
    ("tensorflow~=1.15.0", False),  # admits 1.15.0: judged again once resolved
])
def test_a_cpu_only_build_where_the_spec_asks_for_the_gpu(pin: str, refused: bool) -> None:
    found = [(r, m, f) for r, m, f in _rules(GPU.replace("tensorflow-gpu==1.15.5", pin))
             if r == "tf1-cpu-build"]
    assert bool(found) == refused
    if refused:
        [(_, message, fix)] = found
        assert message.startswith(f'pypi {pin} with [tensorflow] device = "cuda": ')
        assert fix.startswith('pin "tensorflow-gpu==1.15.5"')


def test_a_resolved_cpu_only_build_is_refused() -> None:
    """An unpinned `tensorflow` resolves to 1.15.5, a CPU-only build: refused once resolved."""
    versions = dict(load_lock(REPO / "locks" / "tf1-gpu-cuda100.lock", REGISTRY)
                    .platforms["linux-64"].expect.versions)
    gpu = load_spec(REPO / "specs" / "tf1-gpu-cuda100.toml", REGISTRY).for_platform("linux-64")
    assert expectations(gpu, versions).device == "cuda"
    pspec = parse_spec(GPU.replace('"tensorflow-gpu==1.15.5"', '"tensorflow<2"'),
                       source="specs/x.toml", registry=REGISTRY).for_platform("linux-64")
    assert [r for r, _, _ in _rules(GPU.replace('"tensorflow-gpu==1.15.5"', '"tensorflow<2"'))
            if r == "tf1-cpu-build"] == []
    with pytest.raises(CompatibilityError, match=r"resolved tensorflow 1\.15\.5 with "
                                                 r"\[tensorflow\] device = \"cuda\""):
        expectations(pspec, versions)


def test_a_minimum_cuda_is_not_refused_from_the_spec_alone() -> None:
    assert _rules(GPU.replace('[cuda]\nversion = "10.0"', '[cuda]\nversion = ">=10.0"')) == []


def test_kernels_the_probe_cannot_run_are_refused() -> None:
    [(rule, message, _)] = _rules(CPU.replace('kernels = ["elementwise", "gemm", "conv"]',
                                              'kernels = ["gemm", "scan"]'))
    assert rule == "tf-kernels" and "scan" in message


def test_resolved_versions_are_judged_too() -> None:
    """An unpinned protobuf resolves to 4.x: lock refuses it as it refuses a pin."""
    pspec = load_spec(REPO / "specs" / "tf1-keras-cpu.toml", REGISTRY).for_platform("linux-64")
    versions = dict(load_lock(REPO / "locks" / "tf1-keras-cpu.lock", REGISTRY)
                    .platforms["linux-64"].expect.versions)
    assert expectations(pspec, versions).device == "cpu"
    with pytest.raises(CompatibilityError, match=r"^linux-64: resolved tensorflow 1\.15\.5 "
                                                 r"with protobuf 4\.24\.4: "):
        expectations(pspec, {**versions, "protobuf": "4.24.4"})

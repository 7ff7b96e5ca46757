"""PyTorch's rules at lock time: on the spec's pins (placeholder, pairing, platform,
pitfalls, kernels) and on the resolved versions (an unpinned torchvision or Pillow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.compat import check_platform_spec, ensure_compatible
from envforge.errors import CompatibilityError, SpecError
from envforge.lockfile import load_lock
from envforge.packs.torch.expect import expectations
from envforge.spec import load_spec, parse_spec
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
OLD = (REPO / "specs" / "torch101-cpu.toml").read_text(encoding="utf-8")
NEW = (REPO / "specs" / "torch14-cpu.toml").read_text(encoding="utf-8")


def _conflicts(text: str, platform: str = "linux-64") -> list[tuple[str, str, str]]:
    pspec = parse_spec(text, source="t.toml", registry=REGISTRY).for_platform(platform)  # type: ignore[arg-type]
    return [(c.rule, c.message, c.fix) for c in check_platform_spec(pspec, REGISTRY)]


@pytest.mark.parametrize("text", [OLD, NEW])
def test_the_committed_specs_pass(text: str) -> None:
    assert _conflicts(text) == []


def test_torchvision_of_another_torch_is_refused_naming_the_line() -> None:
    text = NEW.replace('"torchvision==0.5.0"', '"torchvision==0.2.2"')
    [(rule, message, fix)] = _conflicts(text)
    assert rule == "torch-torchvision"
    assert message.startswith("pypi torchvision==0.2.2 with pypi torch==1.4.0: torch 1.4.0 "
                              "goes with torchvision ==0.5.0")
    assert fix.startswith('pin "torchvision==0.5.0" with torch 1.4.0')
    with pytest.raises(CompatibilityError) as caught:
        ensure_compatible(parse_spec(text, source="t.toml", registry=REGISTRY), REGISTRY)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if row.startswith("packages"))
    assert str(caught.value).startswith(f"t.toml:{line}: pypi.packages: linux-64: pypi "
                                        "torchvision==0.2.2 with pypi torch==1.4.0")


def test_a_loose_torchvision_pin_that_allows_the_pair_passes() -> None:
    assert _conflicts(NEW.replace('"torchvision==0.5.0"', '"torchvision>=0.4"')) == []


def test_the_pytorch_placeholder_is_refused() -> None:
    text = NEW.replace('"torch==1.4.0", ', '"pytorch", ').replace('"torchvision==0.5.0", ', "")
    [(rule, message, fix)] = _conflicts(text)
    assert rule == "torch-placeholder"
    assert message.startswith('pypi pytorch: PyPI\'s "pytorch" 1.0.2 is a placeholder')
    assert 'The package named for PyTorch is "torch"' in message
    assert fix.startswith('write "torch" in [pypi] packages')


def test_a_platform_pypi_has_no_wheel_for() -> None:
    text = OLD.replace('platforms = ["linux-64"]', 'platforms = ["linux-64", "win-64"]')
    [(rule, message, _)] = _conflicts(text, "win-64")
    assert rule == "torch-platform"
    assert message.startswith("pypi torch==1.0.1: PyPI has no win-64 wheel of torch 1.0.1")
    assert _conflicts(text) == []


def test_pillow_7_under_torchvision_0_2_is_refused() -> None:
    [(rule, message, fix)] = _conflicts(OLD.replace('"pillow<7"', '"pillow>=7"'))
    assert rule == "torchvision-pillow7"
    assert message.startswith("pypi torchvision==0.2.2 with pypi pillow>=7:")
    assert "cannot import name 'PILLOW_VERSION'" in message and fix.startswith('pin "pillow<7"')


def test_kernels_the_probe_does_not_run() -> None:
    """Theano's scan is no kernel of a spec that does not mount [theano]: refused where the
    spec is read, naming its line and the kernels it may name."""
    text = NEW.replace('kernels = ["elementwise", "gemm", "conv"]', 'kernels = ["gemm", "scan"]')
    line = text[:text.index('"scan"')].count("\n") + 1
    with pytest.raises(SpecError, match=rf"^t.toml:{line}: verify.kernels.1: unknown kernel "
                                        r"'scan' \(the core's and the mounted packs': "
                                        r"elementwise, gemm, conv, grad, train\)"):
        _conflicts(text)


def _locked(name: str) -> tuple[dict[str, str], object]:
    pspec = load_spec(REPO / "specs" / f"{name}.toml", REGISTRY).for_platform("linux-64")
    versions = dict(load_lock(REPO / "locks" / f"{name}.lock", REGISTRY)
                    .platforms["linux-64"].expect.versions)
    return versions, pspec


def test_resolved_versions_are_judged() -> None:
    versions, pspec = _locked("torch101-cpu")
    table = expectations(pspec, versions)  # type: ignore[arg-type]
    assert table.wheel_cuda == "9.0.176" and table.torchvision and table.jit
    with pytest.raises(CompatibilityError, match=r"resolved torchvision 0\.5\.0 with torch "
                                                 r"1\.0\.1: torch 1\.0\.1 goes with"):
        expectations(pspec, {**versions, "torchvision": "0.5.0"})  # type: ignore[arg-type]
    with pytest.raises(CompatibilityError, match=r"resolved torchvision 0\.2\.2 with "
                                                 r"pillow 7\.0\.0: Pillow 7\.0 removed"):
        expectations(pspec, {**versions, "pillow": "7.0.0"})  # type: ignore[arg-type]


def test_lock_refuses_the_placeholder_before_resolving(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`envforge lock` exits 2 with one line naming the spec's line and the fix; no lock."""
    from envforge.cli import main

    spec = tmp_path / "specs" / "p.toml"
    spec.parent.mkdir()
    spec.write_text(NEW.replace('"torch==1.4.0", "torchvision==0.5.0"',
                                '"pytorch", "torchvision==0.5.0"'), encoding="utf-8")
    capsys.readouterr()
    assert main(["lock", str(spec)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {spec}:18: pypi.packages: linux-64: pypi pytorch: ")
    assert line.endswith('fix: write "torch" in [pypi] packages ("pytorch" is the conda '
                         "package's name)")
    assert not (tmp_path / "locks").exists()


def test_a_numpy_older_than_the_wheels_c_api_is_refused() -> None:
    [(rule, message, _)] = _conflicts(NEW.replace('"numpy>=1.18,<1.19"', '"numpy==1.13.3"'))
    assert rule == "torch-numpy-abi"
    assert "module compiled against API version 0xc but this version of numpy is 0xb" in message
    assert _conflicts(NEW.replace('"numpy>=1.18,<1.19"', '"numpy==1.14.6"')) == []


def test_the_refusal_carries_both_repairs_that_would_resolve_it() -> None:
    """pytorch-semseg (2019-03): torch 0.4.1 is not on PyPI and torchvision 0.2.0 is yanked,
    so init moved them to 1.0.0 and 0.3.0, which this rule refuses; init tries the repairs
    in order (torchvision 0.2.2, yanked too; then torch 1.1.0, 0.3.0's own)."""
    text = NEW.replace('"torch==1.4.0"', '"torch==1.0.0"').replace(
        '"torchvision==0.5.0"', '"torchvision==0.3.0"')
    with pytest.raises(CompatibilityError) as caught:
        ensure_compatible(parse_spec(text, source="t.toml", registry=REGISTRY), REGISTRY)
    assert caught.value.repairs == ("torchvision>=0.2.2,<0.2.3", "torch==1.1.0")
    assert '"torch==1.1.0", the release your torchvision is built for' in caught.value.fix
    loose = NEW.replace('"torchvision==0.5.0"', '"torchvision<0.3"')  # no exact release
    [conflict] = [c for c in check_platform_spec(parse_spec(
        loose, source="t.toml", registry=REGISTRY).for_platform("linux-64"), REGISTRY)]
    assert conflict.repairs == ("torchvision==0.5.0",)

"""Compatibility checks from the spec alone: one test per refusal, and the shipped specs pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomli_w

from envforge.compat import (
    Releases,
    check_platform_spec,
    conda_pin,
    ensure_compatible,
    interval,
    pypi_pin,
)
from envforge.errors import CompatibilityError
from envforge.spec import PlatformSpec, load_spec, parse_spec
from tests.testing.packs import REGISTRY

SPECS = Path(__file__).resolve().parent.parent / "specs"


def _spec_text(**sections: Any) -> str:
    doc: dict[str, Any] = {
        "project": {"name": "t", "platforms": ["linux-64"]},
        "python": {"version": "3.7"},
        "environment": {"kind": "venv"},
        "pypi": {"packages": ["numpy==1.19.5", "Theano-PyMC==1.0.5"]},
    }
    doc.update(sections)
    return tomli_w.dumps(doc)


def _platform(**sections: Any) -> PlatformSpec:
    return parse_spec(_spec_text(**sections), source="t.toml",
                      registry=REGISTRY).for_platform("linux-64")


def _rules(**sections: Any) -> list[str]:
    return [c.rule for c in check_platform_spec(_platform(**sections), REGISTRY)]


def _only(rule: str, **sections: Any) -> str:
    conflicts = check_platform_spec(_platform(**sections), REGISTRY)
    assert [c.rule for c in conflicts] == [rule], conflicts
    c = conflicts[0]
    assert c.source and c.fix and "\n" not in c.message
    return f"{c.message} | {c.source} | {c.fix}"


@pytest.mark.parametrize("name", ["theano-cpu", "theano-cuda102", "theano-gpu-linux"])
def test_shipped_specs_pass(name: str) -> None:
    spec = load_spec(SPECS / f"{name}.toml", REGISTRY)
    for platform in spec.project.platforms:
        assert check_platform_spec(spec.for_platform(platform), REGISTRY) == []
    ensure_compatible(spec, REGISTRY)


def test_minimal_spec_passes() -> None:
    assert _rules() == []


def test_cudnn_not_built_for_the_pinned_cuda() -> None:
    text = _only("cudnn-cuda", cuda={"version": "11.8"}, cudnn={"version": "7.6.5.32"})
    assert "cuDNN 7.6.5.32 is not built for CUDA 11.8" in text
    assert "10.2" in text and ">=8.1,<8.2.1" in text


def test_cudnn_not_built_for_any_cuda_of_a_minimum() -> None:
    text = _only("cudnn-cuda", cuda={"version": ">=11.8"}, cudnn={"version": "7.6.5.32"})
    assert ">=11.8" in text


def test_cuda_minimum_that_the_cudnn_can_meet_passes() -> None:
    assert _rules(cuda={"version": ">=10.0"}, cudnn={"version": "7.6.5.32"}) == []


def test_unknown_cudnn_is_not_guessed_about() -> None:
    assert _rules(cuda={"version": "12.4"}, cudnn={"version": "9.1.0"},
                  theano={"dnn": "disabled"}) == []


@pytest.mark.parametrize("dnn", ["auto", "enabled", "no_check"])
def test_cudnn_8_with_theano_1_0_5_needs_dnn_disabled(dnn: str) -> None:
    text = _only("theano-cudnn8", cuda={"version": "11.0"}, cudnn={"version": "8.0.5.39"},
                 theano={"dnn": dnn})
    assert "seen here" in text and 'dnn = "disabled"' in text


def test_cudnn_8_with_dnn_disabled_passes() -> None:
    assert _rules(cuda={"version": "11.0"}, cudnn={"version": "8.0.5.39"},
                  theano={"dnn": "disabled"}) == []


def test_cudnn_older_than_5_is_rejected() -> None:
    text = _only("theano-cudnn-old", cuda={"version": "8.0"}, cudnn={"version": "4.0.7"})
    assert "4007 < 5000" in text


def test_numpy_1_22_without_blas_ldflags() -> None:
    text = _only("theano-numpy-flag", pypi={"packages": ["numpy==1.23.5", "Theano-PyMC==1.0.5"]})
    assert "blas.ldflags" in text and "blas_ldflags" in text


def test_numpy_1_22_with_an_empty_blas_ldflags_is_still_unset() -> None:
    assert _rules(pypi={"packages": ["numpy==1.23.5", "Theano-PyMC==1.0.5"]},
                  theano={"blas_ldflags": ""}) == ["theano-numpy-flag"]


def test_numpy_1_22_with_blas_ldflags_passes() -> None:
    assert _rules(pypi={"packages": ["numpy==1.23.5", "Theano-PyMC==1.0.5"]},
                  theano={"blas_ldflags": "-lopenblas"}) == []


def test_numpy_1_24_breaks_theano_1_0_5() -> None:
    text = _only("theano-numpy", environment={"kind": "conda"},
                 conda={"packages": ["numpy>=1.24", "theano-pymc=1.0.5"]}, pypi={})
    assert "np.bool" in text


def test_numpy_range_that_may_be_fine_is_not_refused() -> None:
    assert _rules(pypi={"packages": ["numpy>=1.20,<1.23", "Theano-PyMC==1.0.5"]}) == []
    assert _rules(pypi={"packages": ["numpy>=1.22,<1.23", "Theano-PyMC==1.0.5"]}) == \
        ["theano-numpy-flag"]


def test_theano_release_not_pinned_skips_release_rules() -> None:
    assert _rules(pypi={"packages": ["numpy==1.26.4", "Theano-PyMC>=1.0"]}) == []


def test_python_3_12_has_no_distutils() -> None:
    text = _only("theano-python", python={"version": "3.12"})
    assert "distutils" in text and "==3.9.*" in text


def test_python_3_11_breaks_scan_and_the_fix_names_3_9() -> None:
    """Measured (docs/gpu/scan-perform.md): 1.0.5's scan_perform.c fails on 3.11's headers."""
    text = _only("theano-python", python={"version": "3.11"})
    assert "scan_perform.c" in text and "longintrepr.h" in text
    assert "use a Python it takes: ==3.9.*" in text
    assert _rules(python={"version": "3.9"}) == []


def test_pygpu_outside_0_7() -> None:
    text = _only("theano-pygpu", environment={"kind": "conda"},
                 conda={"packages": ["numpy=1.19.5", "theano-pymc=1.0.5", "pygpu=0.8"]})
    assert ">=0.7,<0.8" in text


def test_pygpu_0_7_passes() -> None:
    assert _rules(environment={"kind": "conda"},
                  conda={"packages": ["theano-pymc=1.0.5", "pygpu 0.7.5"]}) == []


def test_flag_unknown_to_the_release_with_the_blogs_correction() -> None:
    text = _only("theano-flag-unknown", theano={"flags": {"cudnn.enable": "True"}})
    assert "[dnn] enabled = True" in text


def test_flag_unknown_to_the_release() -> None:
    text = _only("theano-flag-unknown", theano={"flags": {"gpuarray.preallocat": "0.5"}})
    assert "[TP]" in text


def test_flag_removed_with_the_old_back_end() -> None:
    text = _only("theano-flag-removed", theano={"flags": {"lib.cnmem": "0.8"}})
    assert "gpuarray.preallocate" in text and "preallocate" in text.rsplit("|", 1)[1]


def test_nvcc_flags_were_removed() -> None:
    assert _rules(theano={"flags": {"nvcc.fastmath": "True"}}) == ["theano-flag-removed"]


def test_flag_with_double_underscores_on_1_0_5() -> None:
    text = _only("theano-flag-spelling", theano={"flags": {"gpuarray__sched": "multi"}})
    assert "'gpuarray.sched'" in text


def test_double_underscores_are_that_releases_spelling_on_1_1_2() -> None:
    pypi = {"packages": ["numpy==1.19.5", "Theano-PyMC==1.1.2"]}
    assert _rules(pypi=pypi, theano={"flags": {"gpuarray__sched": "multi"}}) == []
    assert _rules(pypi=pypi, theano={"flags": {"numpy.seterr_all": "raise"}}) == \
        ["theano-flag-unknown"]


def test_flag_repeating_a_theano_key() -> None:
    text = _only("theano-flag-shadows", theano={"flags": {"device": "cuda"}})
    assert "[theano] device" in text


@pytest.mark.parametrize(("flag", "value"), [
    ("gpuarray.single_stream", "yes"), ("exception_verbosity", "High"), ("init_gpu_device", "gpu"),
])
def test_flag_value_theano_refuses(flag: str, value: str) -> None:
    text = _only("theano-flag-value", theano={"flags": {flag: value}})
    assert "ValueError" in text and "[TP]" in text


def test_flag_values_theano_takes() -> None:
    assert _rules(theano={"flags": {"optimizer": "fast_compile", "gpuarray.sched": "multi",
                                    "init_gpu_device": "cuda1", "cuda.root": "/opt/cuda"}}) == []


def test_debian_package_built_for_another_python() -> None:
    text = _only("debian-python", debian={"suite": "bookworm", "packages": ["python3-pygpu"]})
    assert "3.11" in text and "3.7" in text


def test_ensure_compatible_raises_the_first_conflict_as_one_line() -> None:
    text = _spec_text(python={"version": "3.12"})
    spec = parse_spec(text, source="specs/x.toml", registry=REGISTRY)
    with pytest.raises(CompatibilityError) as caught:
        ensure_compatible(spec, REGISTRY)
    message = str(caught.value)
    line = text.splitlines().index('version = "3.12"') + 1
    assert message.startswith(f"specs/x.toml:{line}: python.version: linux-64: Theano-PyMC 1.0.5 "
                              "with Python >=3.12")
    assert "(source: " in message and "; fix: " in message and "\n" not in message
    assert caught.value.source and caught.value.fix


@pytest.mark.parametrize(("text", "name", "exact"), [
    ("numpy=1.19.5", "numpy", "1.19.5"), ("numpy==1.19.5", "numpy", "1.19.5"),
    ("numpy 1.19.5 py37_0", "numpy", "1.19.5"), ("conda-forge::pygpu=0.7.6=py37h0", "pygpu",
                                                  "0.7.6"),
    ("numpy==1.19.5=py37_0", "numpy", "1.19.5"), ("Theano-PyMC=1.0.5", "theano-pymc", "1.0.5"),
])
def test_conda_pins_with_one_release(text: str, name: str, exact: str) -> None:
    found = conda_pin(text)
    assert found is not None and found[0] == name
    assert found[1] is not None and str(found[1].exact) == exact


@pytest.mark.parametrize(("text", "low", "high"), [
    ("python=3.7", "3.7", "3.8"), ("pygpu=0.7", "0.7", "0.8"), ("numpy 1.19.*", "1.19", "1.20"),
    ("numpy>=1.22,<1.24", "1.22", "1.24"),
])
def test_conda_pins_with_a_range(text: str, low: str, high: str) -> None:
    found = conda_pin(text)
    assert found is not None and found[1] is not None
    assert (str(found[1].low), str(found[1].high), found[1].exact) == (low, high, None)


def test_conda_pins_that_say_nothing() -> None:
    assert conda_pin("scipy") == ("scipy", None)
    assert conda_pin("numpy 1.19|1.20") == ("numpy", None)


def test_pypi_pins() -> None:
    found = pypi_pin("Theano_PyMC==1.0.5")
    assert found is not None and found[0] == "theano-pymc"
    assert found[1] is not None and str(found[1].exact) == "1.0.5"
    assert pypi_pin("not a requirement !!") is None


def _r(spec: str) -> Releases:
    found = interval(spec)
    assert found is not None
    return found


def test_releases_within_and_disjoint() -> None:
    assert _r("==1.24.1").within(_r(">=1.24"))
    assert not _r(">=1.23").within(_r(">=1.24"))
    assert _r(">1.24").within(_r(">=1.24"))
    assert not _r("<=1.24").within(_r("<1.24"))
    assert _r("==0.8.*").disjoint(_r(">=0.7,<0.8"))
    assert _r("<0.7").disjoint(_r(">=0.7,<0.8"))
    assert not _r("<=0.7").disjoint(_r(">=0.7,<0.8"))
    assert not _r("~=0.7.5").disjoint(_r(">=0.7,<0.8"))
    assert _r("~=0.7.5").within(_r(">=0.7,<0.8"))
    assert interval("not a spec") is None


def test_a_local_build_is_its_public_release_to_the_rules() -> None:
    """PEP 440: ``==0.5.0`` matches 0.5.0+cpu, so a rule on 0.5.0 holds for PyTorch's +cpu
    builds (torchvision 0.5.0+cpu with torch 1.4.0+cpu was refused as unpaired)."""
    assert str(_r("==1.4.0+cpu").exact) == "1.4.0"
    assert _r("==0.5.0+cpu").within(_r("==0.5.0"))
    assert not _r("==0.5.0+cpu").disjoint(_r(">=0.5.0,<0.5.1"))
    assert _r("==0.6.0+cu101").disjoint(_r("==0.5.0"))
    assert "torch-torchvision" not in _rules(
        pypi={"packages": ["torch==1.4.0+cpu", "torchvision==0.5.0+cpu"]}, torch={})
    assert "torch-torchvision" in _rules(
        pypi={"packages": ["torch==1.4.0+cpu", "torchvision==0.6.0+cpu"]}, torch={})


def test_cudnn_8_0_5_with_cuda_11_1_passes() -> None:
    """cuDNN 8.0.4/8.0.5 were built for CUDA 11.1 too (Spack's cudnn 8.0.5.39-11.1)."""
    assert _rules(cuda={"version": "11.1"}, cudnn={"version": "8.0.5.39"},
                  theano={"dnn": "disabled"}) == []
    assert _rules(cuda={"version": "11.1"}, cudnn={"version": "8.0.3.33"},
                  theano={"dnn": "disabled"}) == ["cudnn-cuda"]


@pytest.mark.parametrize("packages", [
    ["numpy==1.19.5", "Theano-PyMC==1.0.5", "Theano==1.0.5"],
    ["numpy==1.19.5", "theano>=0.8.2", "Theano-PyMC==1.0.5"],
])
def test_theano_and_theano_pymc_together_are_refused(packages: list[str]) -> None:
    (conflict,) = check_platform_spec(_platform(pypi={"packages": packages}), REGISTRY)
    assert conflict.rule == "theano-two-distributions"
    assert "both install the `theano` package" in conflict.message
    assert conflict.fix.startswith("drop ") and "Theano-PyMC==1.0.5" in conflict.fix
    assert "pypi.org/pypi/Theano/json" in conflict.source


def test_theano_and_theano_pymc_from_conda_and_pypi_are_refused() -> None:
    spec = _platform(environment={"kind": "conda"}, conda={"packages": ["theano=1.0.4"]})
    assert [c.rule for c in check_platform_spec(spec, REGISTRY)] == ["theano-two-distributions"]


def test_original_theano_gets_an_answer_with_a_fix() -> None:
    (conflict,) = check_platform_spec(
        _platform(pypi={"packages": ["numpy==1.19.5", "Theano==0.8.2"]}), REGISTRY)
    assert conflict.rule == "theano-original"
    assert "knows no rules" not in conflict.message
    assert "the original Theano (PyPI Theano, 0.8.0-1.0.5)" in conflict.message
    assert conflict.fix.startswith("replace it with Theano-PyMC==1.0.5")


def test_pygpu_from_pypi_is_refused() -> None:
    (conflict,) = check_platform_spec(
        _platform(pypi={"packages": ["numpy==1.19.5", "Theano-PyMC==1.0.5",
                                     "pygpu==0.7.6"]}), REGISTRY)
    assert conflict.rule == "not-on-pypi"
    assert "from versions: none" in conflict.message
    assert "conda" in conflict.fix and "python3-pygpu" in conflict.fix


def test_both_theanos_refused_by_ensure_compatible(tmp_path: Path) -> None:
    path = tmp_path / "both.toml"
    path.write_text(_spec_text(pypi={"packages": ["Theano-PyMC==1.0.5", "Theano==1.0.5"]}))
    with pytest.raises(CompatibilityError) as caught:
        ensure_compatible(load_spec(path, REGISTRY), REGISTRY)
    assert "fix: drop Theano==1.0.5" in str(caught.value)


def test_a_conflict_names_the_line_of_a_platform_s_own_pin() -> None:
    text = _spec_text(project={"name": "t", "platforms": ["linux-64", "win-64"]}) \
        + '\n[python.platform.win-64]\nversion = "3.12"\n'
    spec = parse_spec(text, source="specs/x.toml", registry=REGISTRY)
    with pytest.raises(CompatibilityError) as caught:
        ensure_compatible(spec, REGISTRY)
    line = len(text.splitlines())
    assert str(caught.value).startswith(
        f"specs/x.toml:{line}: python.platform.win-64.version: win-64: ")

"""The probe against a real Python 3.7 with Theano-PyMC 1.0.5 compiling C++ with g++.

One venv serves the whole session. Theano's first compile of each op is the slow part (g++
on every kernel and scan's C loop: 85 s of a make test), so its compiledir is kept in the
run's shared cache, as the suite's other compiled modules are: g++ builds them on the first
run, later runs load them (tests/testing/testcache.py; ENVFORGE_TEST_CACHE=off: a cold one).
Theano keys each module by its code, compiler and NumPy ABI and locks the compiledir, so
runs at once share it. HOME points into the session's tmp, so no ``~/.theanorc`` or
``~/.theano`` of the machine takes part.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from envforge.errors import ExitCode, ToolError
from envforge.expectations import kernel_expectations
from envforge.host import proc
from envforge.lockfile import Expectations
from envforge.packs.theano import PROBE_SCRIPT
from envforge.packs.theano.expect import TheanoExpect
from envforge.probes import probe_command
from envforge.spec import ConvShape, VerifySection
from envforge.verify import CheckRow, build_request, check_report, verdict
from envforge.verify_report import to_junit
from tests.testing.packs import REGISTRY

pytestmark = [pytest.mark.slow, pytest.mark.network]

INDEX = "https://pypi.org/simple"
# The theano-cpu spec's stack; setuptools because theano.gpuarray imports pkg_resources
# (the device=cuda test needs it) and a uv venv has none. 68.0 is the last for Python 3.7.
PACKAGES = ("numpy==1.19.5", "scipy==1.7.3", "six==1.16.0", "Theano-PyMC==1.0.5",
            "setuptools==68.0.0")
VERSIONS = {"python": "3.7", "numpy": "1.19.5", "scipy": "1.7.3", "six": "1.16.0",
            "theano": "1.0.5"}
PROBE_COMPILEDIR = "theano-probe-tests"  # in the run's shared cache: envforge never reads it
# Small enough for two cores; the conv keeps the benchmark's four layers.
SMALL = VerifySection(elementwise_size=10 * 30 * 768, gemm_size=64,
                      conv=ConvShape(batch=2, size=8), repeats=2)


@dataclass(frozen=True)
class Target:
    python: Path
    home: Path
    compiledir: Path


def _uv() -> str:
    uv = pytest.importorskip("uv", reason="uv is in envforge's resolve extra")
    return str(uv.find_uv_bin())


def _python37() -> str:
    """uv's discovery first; pyenv's shims can hide a 3.7 from it, so then envforge's own."""
    try:
        return proc.run([_uv(), "python", "find", "--no-python-downloads", "3.7"],
                        timeout=60).stdout.strip()
    except ToolError:
        from envforge.host.interpreters import find_interpreter

        return str(find_interpreter("3.7").executable)


@pytest.fixture(scope="session")
def target(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Target:
    root = tmp_path_factory.mktemp("py37")
    venv = root / "venv"
    proc.run([_uv(), "venv", "--python", _python37(), str(venv)], timeout=300)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    proc.run([_uv(), "pip", "install", "--python", str(python), "--index-url", INDEX,
              *PACKAGES], timeout=600)
    home = root / "home"
    home.mkdir()
    return Target(python, home, shared_cache / PROBE_COMPILEDIR)


def run_probe(target: Target, request: dict[str, Any], *, flags: str,
              theanorc: str | None = None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEANO", "PYTHON"))}
    env.update(HOME=str(target.home), USERPROFILE=str(target.home),
               THEANO_FLAGS=f"base_compiledir={target.compiledir},{flags}")
    if theanorc is not None:
        rc = target.home / "probe.theanorc"
        rc.write_text(theanorc, encoding="utf-8")
        env["THEANORC"] = str(rc)
    done = proc.run(probe_command(target.python, PROBE_SCRIPT), env=env,
                    input_text=json.dumps(request),
                    timeout=900)
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _expect(float_x: str, **changes: Any) -> Expectations:
    flags = changes.pop("theano_flags", {"mode": "FAST_RUN", "allow_gc": "False"})
    expect = Expectations(versions=VERSIONS, device="cpu", float_x=float_x,
                          packs={"theano": TheanoExpect(flags=flags)},
                          kernels=kernel_expectations(SMALL, float_x, REGISTRY), repeats=2)
    return expect.model_copy(update=changes)


@pytest.fixture(scope="session")
def cpu_float64(target: Target) -> tuple[Expectations, dict[str, Any]]:
    expect = _expect("float64")
    # Flags from a .theanorc named by THEANORC, as envforge's apply writes them.
    report = run_probe(target, build_request(expect, REGISTRY), flags="device=cpu",
                       theanorc="[global]\nfloatX = float64\nmode = FAST_RUN\n"
                                "allow_gc = False\n")
    return expect, report


def _failures(rows: tuple[CheckRow, ...]) -> dict[str, str]:
    return {r.name: r.why for r in rows if r.status == "fail"}


def test_cpu_float64_every_row_passes(cpu_float64: tuple[Expectations, dict[str, Any]],
                                      target: Target) -> None:
    expect, report = cpu_float64
    rows = check_report(report, expect, REGISTRY, gpu_expected=False)
    assert _failures(rows) == {}
    assert verdict(rows) == ExitCode.OK
    passed = {r.name for r in rows if r.status == "pass"}
    assert {"version.python", "version.theano", "device", "floatX", "flag.mode",
            "flag.allow_gc", "kernel.elementwise.samples", "kernel.gemm.checksum",
            "kernel.conv.checksum", "kernel.conv.samples"} <= passed
    # What the report says about the environment, as Theano saw it.
    assert report["python"]["version"].startswith("3.7.")
    assert report["theano"]["config"]["base_compiledir"] == str(target.compiledir)
    assert report["theano"]["config_files"] == [
        {"path": str(target.home / "probe.theanorc"), "exists": True}]
    assert report["theano"]["theano_flags_env"].endswith("device=cpu")
    assert report["blas"]["implementation"] == "numpy-c-api"  # no blas.ldflags given
    (blas,) = [r for r in rows if r.name == "blas"]  # said, not failed: none was asked for
    assert (blas.status, blas.found) == ("skip", "numpy-c-api") and "NumPy's C API" in blas.why
    assert report["import_errors"] == {"pygpu": "ModuleNotFoundError: No module named 'pygpu'"}
    assert report["gpu"]["pygpu_activated"] is False
    kernels = {k["name"]: k for k in report["kernels"]}
    assert kernels["gemm"]["ops"] == ["Dot22"]
    assert "CorrMM" in kernels["conv"]["ops"] or "ConvOp" in kernels["conv"]["ops"]
    assert not any(k["uses_gpu"] for k in kernels.values())
    assert all(k["compile_s"] > 0 and k["run_s"] > 0 for k in kernels.values())
    # The tutorial's numbers, from Theano itself.
    assert [round(v, 8) for v in kernels["elementwise"]["samples"][:3]] == \
        [1.23178032, 1.61879341, 1.52278065]


def test_a_perturbed_checksum_fails_naming_the_kernel(
        cpu_float64: tuple[Expectations, dict[str, Any]]) -> None:
    expect, report = cpu_float64
    kernels = tuple(k.model_copy(update={"checksum": k.checksum * (1 + 1e-3)})
                    if k.name == "conv" else k for k in expect.kernels)
    rows = check_report(report, expect.model_copy(update={"kernels": kernels}), REGISTRY,
                        gpu_expected=False)
    assert list(_failures(rows)) == ["kernel.conv.checksum"]
    assert "kernel conv" in _failures(rows)["kernel.conv.checksum"]
    assert verdict(rows) == ExitCode.FAILED
    # The JUnit rendering of the real rows is valid XML with the failure where it belongs.
    suite = ET.fromstring(to_junit(rows).encode()).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["kernel.conv.checksum"]
    assert len(suite.findall("testcase")) == len(rows)


def test_cpu_float32_meets_the_float32_tolerances(target: Target) -> None:
    every = SMALL.model_copy(update={"kernels": (
        "elementwise", "gemm", "conv", "scan", "grad", "random", "softmax_xent", "train")})
    expect = _expect("float32", theano_flags={},
                     kernels=kernel_expectations(every, "float32", REGISTRY))
    report = run_probe(target, build_request(expect, REGISTRY), flags="device=cpu,floatX=float32")
    rows = check_report(report, expect, REGISTRY, gpu_expected=False)
    assert _failures(rows) == {}
    assert {k["dtype"] for k in report["kernels"]} == {"float32"}
    kernels = {k["name"]: k for k in report["kernels"]}
    assert "CrossentropySoftmaxArgmax1HotWithBias" in kernels["softmax_xent"]["ops"]
    assert "mrg_uniform" in kernels["random"]["ops"]
    assert kernels["scan"]["scan"]["implementation"] == "c"
    assert kernels["scan"]["scan"]["module"].endswith(("scan_perform.so", ".pyd"))


def test_scan_without_a_compiler_is_reported_as_the_python_loop(target: Target) -> None:
    """cxx= is Theano's way to run without C: scan falls back to Scan.execute, and the
    report says so (with a compiler, the C row would fail; without one it is skipped)."""
    verify = SMALL.model_copy(update={"kernels": ("scan",)})
    expect = _expect("float64", theano_flags={},
                     kernels=kernel_expectations(verify, "float64", REGISTRY))
    report = run_probe(target, build_request(expect, REGISTRY), flags="device=cpu,cxx=")
    (scan,) = report["kernels"]
    assert scan["error"] is None and scan["scan"]["implementation"] == "python"
    rows = {r.name: r for r in check_report(report, expect, REGISTRY, gpu_expected=False)}
    assert rows["kernel.scan.checksum"].status == "pass"
    assert rows["kernel.scan.implementation"].status == "skip"
    report["theano"]["config"]["cxx"] = "g++"  # the same run, had Theano a compiler
    rows = {r.name: r for r in check_report(report, expect, REGISTRY, gpu_expected=False)}
    assert rows["kernel.scan.implementation"].status == "fail"


def test_silent_cpu_fallback_is_caught(target: Target) -> None:
    """device=cuda without pygpu: Theano only logs an error and computes on the CPU."""
    verify = SMALL.model_copy(update={"kernels": ("elementwise",)})
    expect = Expectations(versions=VERSIONS, device="cuda", float_x="float64",
                          packs={"theano": TheanoExpect(flags={})},
                          kernels=kernel_expectations(verify, "float64", REGISTRY),
                          min_gpu_speedup=5.0)
    report = run_probe(target, build_request(expect, REGISTRY), flags="device=cuda")
    assert report["cpu_compare"] is False  # nothing to compare against
    rows = {r.name: r for r in check_report(report, expect, REGISTRY, gpu_expected=True)}
    assert rows["device"].status == "pass"  # the flag was right...
    assert rows["gpu.backend"].status == "fail"  # ...and still no GPU
    assert "fell back to the CPU" in rows["gpu.backend"].why
    assert "No module named 'pygpu'" in rows["gpu.backend"].why
    assert rows["gpu.ops.elementwise"].status == "fail"
    assert rows["kernel.elementwise.checksum"].status == "pass"
    assert rows["gpu.speedup"].status == "skip"
    assert any("pygpu was configured" in line for line in report["theano"]["log"])


def test_a_failing_kernel_does_not_stop_the_probe(target: Target) -> None:
    request = {"kernels": [
        {"name": "conv", "seed": 1, "shape": [1, 3, 8, 8], "channels": [4, 4],
         "sample_indices": [0]},
        {"name": "nonsense", "seed": 1, "shape": [2]},
        {"name": "elementwise", "seed": 1, "shape": [5], "sample_indices": [0, 99]},
        {"name": "gemm", "seed": 1, "shape": [3, 3], "sample_indices": [8]},
    ], "repeats": 1}
    report = run_probe(target, request, flags="device=cpu")
    conv, nonsense, elementwise, gemm = report["kernels"]
    assert conv["error"] and conv["checksum"] is None  # 3 input channels, filters for 4
    assert "unknown kernel" in nonsense["error"]
    assert "outside an output of 5 values" in elementwise["error"]
    assert gemm["error"] is None and gemm["samples"] is not None


def test_a_bad_request_still_gets_a_json_answer(target: Target) -> None:
    env = {**os.environ, "HOME": str(target.home)}
    done = proc.run(probe_command(target.python, PROBE_SCRIPT), env=env, input_text="[1, 2",
                    check=False, timeout=300)
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["format"] == 1 and "JSONDecodeError" in report["error"]
    rows = check_report(report, _expect("float64"), REGISTRY, gpu_expected=False)
    assert [r.name for r in rows] == ["probe"] and verdict(rows) == ExitCode.FAILED


def test_blas_ldflags_that_do_not_link_fail_the_blas_row(target: Target) -> None:
    """Theano takes set flags on trust: a library they name that is gone fails only at the
    first GEMM. The row runs Theano's own test of them (a ddot_ call compiled, linked and
    run) and fails, where it passed on the flags' words alone before."""
    verify = SMALL.model_copy(update={"kernels": ("elementwise",)})
    flags = "-L/nonexistent/envforge-openblas -lenvforge_no_such_blas"
    expect = _expect("float64", theano_flags={"blas.ldflags": flags},
                     kernels=kernel_expectations(verify, "float64", REGISTRY))
    report = run_probe(target, build_request(expect, REGISTRY),
                       flags=f"device=cpu,blas.ldflags={flags}")
    assert report["blas"]["implementation"] == "c-blas"
    assert report["blas"]["links"] is False
    rows = {r.name: r for r in check_report(report, expect, REGISTRY, gpu_expected=False)}
    assert rows["blas"].status == "fail" and "Theano's own test" in rows["blas"].why

"""Verify's judgement on probe reports, and its JSON, JUnit, Markdown and HTML renderings.

Reports here are built the way the probe builds them, with outputs computed by NumPy
and rounded to floatX as a float32 Theano would; the real probe is tested against real
Theano in tests/probe/test_probe.py.
"""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

from envforge import __version__
from envforge.errors import ExitCode
from envforge.expectations import conv2d, kernel_expectations, kernel_inputs, reference_output
from envforge.knowledge import cudnn_version_code
from envforge.lockfile import Expectations, KernelExpectation
from envforge.packapi import Registry
from envforge.packs.base import PackDefaults
from envforge.packs.theano import PROBE_SCRIPT
from envforge.packs.theano.expect import TheanoExpect, theano_expect
from envforge.spec import ConvShape, VerifySection
from envforge.verify import (
    CheckRow,
    build_request,
    check_report,
    hinted,
    kernel_timings,
    verdict,
)
from envforge.verify_report import timing_svg, to_html, to_json, to_junit, to_markdown
from tests.testing.packs import REGISTRY

VERIFY = VerifySection(elementwise_size=500, gemm_size=24,
                       conv=ConvShape(batch=1, size=8, channels=(3, 4, 4)), rtol=1e-4,
                       atol=1e-6, min_gpu_speedup=5.0)
GPU_FLAGS = {"device": "cuda", "floatX": "float32", "dnn.enabled": "False",
             "blas.ldflags": "-L{prefix}/lib -lopenblas", "gpuarray.preallocate": "0.8",
             "allow_gc": "True"}


def _expect(**changes: Any) -> Expectations:
    flags = changes.pop("theano_flags", GPU_FLAGS)
    theano = TheanoExpect(flags=flags, min_cublas_ratio=changes.pop("min_cublas_ratio", 0.9))
    base = Expectations(
        versions={"python": "3.11", "numpy": "1.23.5", "theano": "1.0.5", "pygpu": "0.7.6",
                  "libgpuarray": "0.7.6"},
        device="cuda", float_x="float32", packs={"theano": theano},
        kernels=kernel_expectations(VERIFY, "float32",
                                    REGISTRY), min_gpu_speedup=5.0, cuda=">=11.8")
    return base.model_copy(update=changes)


_OUTPUTS: dict[tuple[str, int, tuple[int, ...]], np.ndarray] = {}


def _kernel_entry(kernel: KernelExpectation, *, gpu: bool, output: np.ndarray | None = None,
                  speedup: float = 20.0) -> dict[str, Any]:
    if output is None:
        key = (kernel.name, kernel.seed, kernel.shape)
        if key not in _OUTPUTS:
            _OUTPUTS[key] = reference_output(kernel.name, packs=REGISTRY,
                                             seed=kernel.seed, shape=kernel.shape,
                                             float_x="float32", conv=kernel.conv,
                                             params=kernel.params).astype(np.float32)
        output = _OUTPUTS[key]
    flat = output.astype(np.float64).ravel()
    # The graphs Theano 1.0.5 compiled on an H200 (dnn disabled) and on the CPU.
    ops = {"elementwise": ["Elemwise"], "gemm": ["Dot22"],
           "conv": ["Subtensor", "CorrMM", "Elemwise"], "scan": ["Shape_i", "Scan"],
           "grad": ["Dot22", "Gemm", "Elemwise"], "random": ["mrg_uniform", "Join"],
           "softmax_xent": ["Dot22", "CrossentropySoftmaxArgmax1HotWithBias"],
           "train": ["Gemv", "Elemwise"]}
    gpu_ops = {"elementwise": ["GpuFromHost", "GpuElemwise", "HostFromGpu"],
               "gemm": ["GpuFromHost", "GpuFromHost", "GpuDot22", "HostFromGpu"],
               "conv": ["Subtensor", "GpuFromHost", "GpuContiguous", "GpuCorrMM",
                        "GpuElemwise", "HostFromGpu"]}
    names = gpu_ops.get(kernel.name, ["GpuFromHost", *ops[kernel.name], "HostFromGpu"]) \
        if gpu else ops[kernel.name]
    entry = {"name": kernel.name, "seed": kernel.seed, "shape": list(kernel.shape),
             "dtype": "float32", "output_shape": list(output.shape),
             "checksum": float(flat.sum()), "samples": [float(flat[i]) for i in
                                                        kernel.sample_indices],
             "nonfinite": 0, "ops": names,
             "gpu_ops": [n for n in names if n.startswith("Gpu")],
             "uses_gpu": gpu, "compile_s": 3.0, "run_s": 0.01, "error": None,
             "cpu": {"run_s": 0.01 * speedup, "ops": ops[kernel.name]} if gpu else None,
             "speedup": speedup if gpu else None}
    if kernel.name == "scan":
        entry["scan"] = {"implementation": "c", "version": 0.296, "inner_ops": ["Gemv"],
                         "module": "/c/scan_perform/scan_perform.so", "error": None}
    if kernel.name == "gemm" and gpu:  # 4096 on an H200, as measured in the issue
        entry["gemm_timing"] = {"resident_s": 2.69e-3, "with_copies_s": 47e-3,
                                "tflops": 51.1, "cublas_s": 2.68e-3, "cublas_tflops": 51.2,
                                "ratio": 0.997, "cublas_library": "/usr/lib/libcublas.so.12",
                                "iterations": 20, "error": None}
    return entry


def _report(expect: Expectations, *, gpu: bool = True, prefix: str = "/env",
            **sections: Any) -> dict[str, Any]:
    # The probe reports what Theano sees: here, the lock's flags.
    config = {k: v.replace("{prefix}", prefix)
              for k, v in {**GPU_FLAGS, **theano_expect(expect).flags}.items()}
    config.update({"gpuarray.preallocate": 0.8, "allow_gc": True, "mode": "Mode",
                   "cxx": "/usr/bin/g++"})
    report: dict[str, Any] = {
        "format": 1,
        "python": {"version": "3.11.2", "executable": "/env/bin/python3.11"},
        "versions": {"numpy": "1.23.5", "scipy": "1.10.1", "six": "1.16.0", "pygpu": "0.7.6",
                     "theano": "1.0.5"},
        "import_errors": {}, "distributions": {"libgpuarray": None},
        "theano": {"config": config, "config_errors": {}, "config_files": [], "log": []},
        "blas": {"implementation": "c-blas", "libraries": ["openblas"],
                 "ldflags": config["blas.ldflags"]},
        "gpu": {"pygpu_activated": gpu, "init_error": None, "devname": "NVIDIA H200",
                "bin_id": "compute_90", "compute_capability": "9.0", "total_gmem": 150109880320,
                "dnn_present": False, "dnn_msg": "Disabled by dnn.enabled flag",
                "dnn_version": None},
        "nvidia": {"driver_version": "580.159.04", "cuda_version": "13.0"},
        "kernels": [_kernel_entry(k, gpu=gpu) for k in expect.kernels],
    }
    report.update(sections)
    return report


def _rows(report: dict[str, Any], expect: Expectations, **kwargs: Any) -> dict[str, CheckRow]:
    kwargs.setdefault("gpu_expected", True)
    kwargs.setdefault("prefix", "/env")
    rows = check_report(report, expect, REGISTRY, **kwargs)
    names = [r.name for r in rows]
    assert len(names) == len(set(names)), "row names are unique"
    return {r.name: r for r in rows}


def test_a_healthy_gpu_report_passes() -> None:
    expect = _expect()
    rows = _rows(_report(expect), expect)
    failed = {n: r.why for n, r in rows.items() if r.status == "fail"}
    assert failed == {}
    assert verdict(rows.values()) == ExitCode.OK
    for name in ("version.numpy", "version.python", "device", "floatX", "flag.blas.ldflags",
                 "flag.gpuarray.preallocate", "flag.allow_gc", "flag.dnn.enabled", "blas",
                 "gpu.backend", "gpu.ops.conv", "kernel.conv.checksum", "kernel.gemm.samples",
                 "gpu.speedup", "cudnn", "cuda.driver"):
        assert rows[name].status == "pass", name
    assert "NVIDIA H200" in rows["gpu.backend"].found
    assert rows["version.libgpuarray"].status == "skip"
    assert rows["gpu.gemm.cublas_ratio"].status == "pass"
    assert "51.1 TFLOP/s" in rows["gpu.gemm.cublas_ratio"].found


# --- the kernels users run: scan, grad, random, softmax_xent, train -------------------

NEW_KERNELS = ("scan", "grad", "random", "softmax_xent", "train")
ALL = VERIFY.model_copy(update={"kernels": ("elementwise", "gemm", "conv", *NEW_KERNELS)})


@functools.cache
def _all_kernels() -> tuple[KernelExpectation, ...]:
    return kernel_expectations(ALL, "float32", REGISTRY)


def _expect_all(**changes: Any) -> Expectations:
    return _expect(kernels=_all_kernels(), **changes)


def test_every_kernel_passes_with_gpu_ops_and_c_scan() -> None:
    expect = _expect_all()
    rows = _rows(_report(expect), expect)
    assert {n: r.why for n, r in rows.items() if r.status == "fail"} == {}
    for name in NEW_KERNELS:
        for row in (f"kernel.{name}.checksum", f"kernel.{name}.samples", f"gpu.ops.{name}"):
            assert rows[row].status == "pass", row
    assert rows["kernel.scan.implementation"].found == "C (scan_perform 0.296)"


@pytest.mark.parametrize("name", NEW_KERNELS)
@pytest.mark.parametrize("field", ["checksum", "samples"])
def test_a_tampered_locked_value_fails_that_row_only(name: str, field: str) -> None:
    expect = _expect_all()
    report = _report(expect)

    def tamper(kernel: KernelExpectation) -> KernelExpectation:
        if kernel.name != name:
            return kernel
        if field == "checksum":
            return kernel.model_copy(update={"checksum": kernel.checksum * 1.01 + 0.01})
        samples = list(kernel.samples)
        samples[-1] = samples[-1] * 1.01 + 0.01
        return kernel.model_copy(update={"samples": tuple(samples)})

    tampered = expect.model_copy(update={"kernels": tuple(map(tamper, expect.kernels))})
    rows = _rows(report, tampered)
    failed = [n for n, r in rows.items() if r.status == "fail"]
    assert failed == [f"kernel.{name}.{field}"]
    assert f"kernel {name}" in rows[failed[0]].why


@pytest.mark.parametrize("name", NEW_KERNELS)
def test_new_kernels_on_cpu_ops_fail_their_gpu_row(name: str) -> None:
    expect = _expect_all()
    report = _report(expect)
    cpu = _kernel_entry(next(k for k in expect.kernels if k.name == name), gpu=False)
    report["kernels"] = [cpu if k["name"] == name else k for k in report["kernels"]]
    rows = _rows(report, expect)
    assert rows[f"gpu.ops.{name}"].status == "fail"
    assert "no GPU op" in rows[f"gpu.ops.{name}"].why


@pytest.mark.parametrize(("implementation", "cxx", "status"), [
    ("c", "/usr/bin/g++", "pass"), ("python", "/usr/bin/g++", "fail"),
    ("mixed", "g++", "fail"), (None, "g++", "fail"), ("python", "", "skip")])
def test_scan_must_run_in_c_when_theano_has_a_compiler(implementation: str | None, cxx: str,
                                                       status: str) -> None:
    expect = _expect_all()
    report = _report(expect)
    report["theano"]["config"]["cxx"] = cxx
    scan = next(k for k in report["kernels"] if k["name"] == "scan")
    scan["scan"]["implementation"] = implementation
    row = _rows(report, expect)["kernel.scan.implementation"]
    assert row.status == status
    if status == "fail":
        assert "kernel scan" in row.why


def test_scan_that_cannot_import_pkg_resources_names_the_knowledge_fix() -> None:
    expect = _expect_all()
    report = _report(expect)
    scan = next(k for k in report["kernels"] if k["name"] == "scan")
    scan.update(error="ModuleNotFoundError: No module named 'pkg_resources'", checksum=None,
                samples=None, scan=None, ops=None, gpu_ops=None)
    rows = _rows(report, expect)
    failed = sorted(n for n, r in rows.items() if r.status == "fail")
    assert failed == ["gpu.ops.scan", "kernel.scan.checksum", "kernel.scan.implementation",
                      "kernel.scan.samples"]
    why = rows["kernel.scan.implementation"].why
    assert "theano/gpuarray/linalg.py:3" in why and "setuptools<80.9" in why
    assert "envforge apply" in why


@pytest.mark.parametrize(("timing", "status", "needle"), [
    ({"ratio": 0.85, "cublas_library": "/x/libcublas.so.12"}, "fail", "85.0% of raw cuBLAS"),
    ({"ratio": None, "error": "libcublas or libcuda is not loaded"}, "fail", "not loaded"),
    (None, "fail", "no resident GEMM timing"),
    ({"ratio": 0.93}, "pass", "0.930")])
def test_cublas_ratio_floor(timing: dict[str, Any] | None, status: str, needle: str) -> None:
    expect = _expect_all()
    report = _report(expect)
    gemm = next(k for k in report["kernels"] if k["name"] == "gemm")
    if timing is None:
        del gemm["gemm_timing"]
    else:
        gemm["gemm_timing"].update(timing)
    row = _rows(report, expect)["gpu.gemm.cublas_ratio"]
    assert row.status == status
    assert needle in (row.why if status == "fail" else row.found)


def test_no_cublas_row_without_a_gpu_or_a_floor() -> None:
    expect = _expect_all()
    assert "gpu.gemm.cublas_ratio" not in _rows(_report(expect, gpu=False), expect,
                                                 gpu_expected=False)
    bare = _expect_all(min_cublas_ratio=None)
    assert "gpu.gemm.cublas_ratio" not in _rows(_report(bare), bare)


def test_train_request_carries_its_learning_rate() -> None:
    request = build_request(_expect_all(), REGISTRY)
    train = next(k for k in request["kernels"] if k["name"] == "train")
    assert train["params"] == {"learning_rate": 0.5}
    assert "params" not in next(k for k in request["kernels"] if k["name"] == "scan")


def test_silent_cpu_fallback_fails_with_the_logged_reason() -> None:
    expect = _expect()
    error = ("Could not initialize pygpu, support disabled: GpuArrayException: "
             "libnvrtc.so: cannot open shared object file")
    report = _report(expect, gpu=False)
    report["gpu"].update(init_error=error, devname=None)
    rows = _rows(report, expect)
    backend = rows["gpu.backend"]
    assert backend.status == "fail"
    assert "fell back to the CPU" in backend.why and "libnvrtc.so" in backend.why
    for kernel in ("elementwise", "gemm", "conv"):
        assert rows[f"gpu.ops.{kernel}"].status == "fail"
        assert kernel in rows[f"gpu.ops.{kernel}"].why
        assert rows[f"kernel.{kernel}.checksum"].status == "pass"  # right numbers, wrong place
    assert rows["gpu.speedup"].status == "skip"
    assert "not active" in rows["gpu.speedup"].why
    assert verdict(rows.values()) == ExitCode.FAILED


def test_missing_pygpu_names_the_import_error_and_its_fix() -> None:
    expect = _expect()
    report = _report(expect, gpu=False)
    report["versions"]["theano"] = None
    report["import_errors"]["theano"] = "ModuleNotFoundError: No module named 'pkg_resources'"
    report["theano"] = None
    rows = _rows(report, expect)
    assert rows["version.theano"].status == "fail"
    why = rows["version.theano"].why
    assert "theano/gpuarray/linalg.py:3" in why and "setuptools<" in why
    assert "envforge apply" in why
    assert rows["device"].status == "fail" and "pkg_resources" in rows["device"].why


def test_a_perturbed_checksum_fails_that_kernel_only() -> None:
    expect = _expect()
    kernels = tuple(k.model_copy(update={"checksum": k.checksum * 1.001})
                    if k.name == "gemm" else k for k in expect.kernels)
    rows = _rows(_report(expect), expect.model_copy(update={"kernels": kernels}))
    assert rows["kernel.gemm.checksum"].status == "fail"
    assert "kernel gemm" in rows["kernel.gemm.checksum"].why
    assert rows["kernel.gemm.samples"].status == "pass"
    assert [n for n, r in rows.items() if r.status == "fail"] == ["kernel.gemm.checksum"]


def test_cross_correlation_instead_of_convolution_fails_the_conv_rows() -> None:
    expect = _expect()
    (conv,) = [k for k in expect.kernels if k.name == "conv"]
    assert conv.conv is not None
    values = kernel_inputs("conv", packs=REGISTRY,
                           seed=conv.seed, shape=conv.shape, float_x="float32",
                           conv=conv.conv)
    h = values[0]
    for w in values[1:]:
        h = np.maximum(conv2d(h, w, filter_flip=False), 0)
    report = _report(expect)
    report["kernels"] = [_kernel_entry(conv, gpu=True, output=h.astype(np.float32))
                         if k["name"] == "conv" else k for k in report["kernels"]]
    rows = _rows(report, expect)
    assert rows["kernel.conv.checksum"].status == "fail"
    assert rows["kernel.conv.samples"].status == "fail"
    assert "kernel conv" in rows["kernel.conv.samples"].why


def test_a_failed_kernel_fails_its_rows_with_the_error() -> None:
    expect = _expect()
    report = _report(expect)
    report["kernels"][0].update(error="RuntimeError: nvrtc compile failed", checksum=None,
                                samples=None)
    del report["kernels"][2]
    rows = _rows(report, expect)
    assert rows["kernel.elementwise.samples"].status == "fail"
    assert "nvrtc compile failed" in rows["kernel.elementwise.checksum"].why
    assert rows["kernel.conv.checksum"].why == "kernel conv: the probe did not run it"
    assert rows["gpu.ops.conv"].status == "fail"


def test_nonfinite_output_and_wrong_shape() -> None:
    expect = _expect()
    report = _report(expect)
    report["kernels"][0].update(checksum=None, nonfinite=3)
    report["kernels"][1].update(output_shape=[24, 23])
    rows = _rows(report, expect)
    assert "3 non-finite" in rows["kernel.elementwise.checksum"].why
    assert "output shape" in rows["kernel.gemm.checksum"].why


class _BackendPack(PackDefaults):
    """A pack whose own part of a report says whether its GPU back-end started."""

    name = "backend"

    def __init__(self, active: bool | None) -> None:
        self.active = active

    def gpu_active(self, report: Any) -> bool | None:
        return self.active


@pytest.mark.parametrize(("active", "status"), [(True, "pass"), (None, "skip"), (False, "skip")])
def test_speedup_is_measured_where_a_pack_says_its_gpu_started(active: bool | None,
                                                               status: str) -> None:
    """The speedup row asks the packs (``FrameworkPack.gpu_active``), not a field of
    Theano's: a report without pygpu's is measured when a pack says its back-end started."""
    expect = _expect()
    report = _report(expect)
    del report["gpu"]["pygpu_activated"]
    rows = check_report(report, expect, Registry([_BackendPack(active)]), gpu_expected=True,
                        prefix="/env")
    speedup = next(row for row in rows if row.name == "gpu.speedup")
    assert speedup.status == status, speedup
    assert (status == "pass") is ("20.0x" in speedup.found)


def test_speedup_below_the_minimum_fails_on_the_heaviest_kernel() -> None:
    expect = _expect()
    report = _report(expect)
    for entry in report["kernels"]:
        entry["speedup"] = 40.0 if entry["name"] == "elementwise" else 2.0
    row = _rows(report, expect)["gpu.speedup"]
    assert row.status == "fail"
    assert "kernel conv" in row.why and "2.0x" in row.why


def test_no_gpu_expected_skips_gpu_rows() -> None:
    expect = _expect()
    rows = _rows(_report(expect, gpu=False), expect, gpu_expected=False)
    for name in ("gpu.backend", "gpu.ops.gemm", "gpu.speedup", "cudnn", "cuda.driver"):
        assert rows[name].status == "skip", name
    assert verdict(rows.values()) == ExitCode.OK


def test_cpu_expectations_have_no_cuda_rows() -> None:
    expect = _expect(device="cpu", float_x="float32", theano_flags={}, cuda=None,
                     min_gpu_speedup=None)
    report = _report(expect, gpu=False)
    report["theano"]["config"]["device"] = "cpu"
    rows = _rows(report, expect, gpu_expected=False)
    assert "cudnn" not in rows and "cuda.driver" not in rows
    assert rows["device"].status == "pass"


def test_flags_compare_by_value_and_spelling() -> None:
    flags = {"blas__ldflags": "-L{prefix}/lib  -lopenblas", "allow_gc": "true",
             "gpuarray__preallocate": "0.80"}
    expect = _expect(theano_flags=flags)
    rows = _rows(_report(expect), expect)
    assert rows["flag.blas.ldflags"].status == "pass"
    assert rows["flag.allow_gc"].status == "pass"
    assert rows["flag.gpuarray.preallocate"].status == "pass"
    no_prefix = _rows(_report(expect), expect, prefix=None)
    assert no_prefix["flag.blas.ldflags"].status == "skip"
    wrong = _report(expect)
    wrong["theano"]["config"]["gpuarray.preallocate"] = 0.0
    row = _rows(wrong, expect)["flag.gpuarray.preallocate"]
    assert row.status == "fail" and "gpuarray.preallocate=0;" in row.why


def test_blas_row_fails_on_the_numpy_fallback() -> None:
    expect = _expect()
    report = _report(expect)
    report["blas"] = {"implementation": "numpy-c-api", "libraries": []}
    assert _rows(report, expect)["blas"].status == "fail"


def test_with_no_blas_asked_for_the_numpy_fallback_is_said_not_failed() -> None:
    """pm-prophet's init spec: no blas_ldflags; Theano warned at each import, verify said
    nothing of it."""
    expect = _expect(theano_flags={"device": "cuda", "floatX": "float32"})
    report = _report(expect)
    report["blas"] = {"implementation": "numpy-c-api", "libraries": []}
    row = _rows(report, expect)["blas"]
    assert row.status == "skip" and "NumPy's C API" in row.why
    report["blas"] = {"implementation": "c-blas", "libraries": ["openblas"]}
    assert _rows(report, expect)["blas"].status == "pass"


def test_versions_match_by_release_prefix_and_specifier() -> None:
    expect = _expect(versions={"python": "3.11", "numpy": ">=1.23,<1.24", "theano": "1.0.5"})
    report = _report(expect)
    rows = _rows(report, expect)
    assert {rows[n].status for n in ("version.python", "version.numpy", "version.theano")} == \
        {"pass"}
    report["versions"]["numpy"] = "1.24.0"
    report["python"]["version"] = "3.12.1"
    rows = _rows(report, expect)
    assert rows["version.numpy"].status == "fail"
    assert rows["version.python"].status == "fail"
    report["versions"]["theano"] = "1.0.50"
    assert _rows(report, expect)["version.theano"].status == "fail"


def test_numpy_too_new_for_theano_gets_a_hint() -> None:
    expect = _expect()
    report = _report(expect)
    report["versions"]["theano"] = None
    report["import_errors"]["theano"] = "AttributeError: module 'numpy' has no attribute 'bool'"
    assert "NumPy < 1.24" in _rows(report, expect)["version.theano"].why


@pytest.mark.parametrize(("dnn", "present", "ops", "status"), [
    ("False", False, ["GpuCorrMM"], "pass"),
    ("False", False, ["GpuDnnConv"], "fail"),
    ("False", True, [], "fail"),
])
def test_cudnn_disabled_means_not_used(dnn: str, present: bool, ops: list[str],
                                       status: str) -> None:
    expect = _expect(theano_flags={**GPU_FLAGS, "dnn.enabled": dnn})
    report = _report(expect)
    report["gpu"]["dnn_present"] = present
    report["kernels"][2]["ops"] = ops
    assert _rows(report, expect)["cudnn"].status == status


def test_theano_10_with_cudnn_8_fails_whatever_the_report() -> None:
    expect = _expect(theano_flags={**GPU_FLAGS, "dnn.enabled": "True"}, cudnn="8.9.7.29")
    report = _report(expect, gpu=False)
    for gpu_expected in (True, False):
        row = _rows(report, expect, gpu_expected=gpu_expected)["cudnn"]
        assert row.status == "fail"
        assert "cudnnGetConvolutionForwardAlgorithm is gone" in row.why
        assert "dnn_fwd.c" in row.why
    found = _expect(theano_flags={**GPU_FLAGS, "dnn.enabled": "auto"})
    report = _report(found)
    report["gpu"].update(dnn_present=True, dnn_version=9140)
    assert _rows(report, found)["cudnn"].status == "fail"


def test_cudnn_9_as_seen_on_an_h200_fails_with_the_fix() -> None:
    """dnn.enabled=auto on a host with cuDNN 9.14: Theano takes it, its conv cannot compile."""
    expect = _expect(theano_flags={**GPU_FLAGS, "dnn.enabled": "auto"})
    report = _report(expect)
    report["gpu"].update(dnn_present=True, dnn_version=91400, dnn_msg=None)
    report["kernels"][2].update(checksum=None, samples=None, error=(
        "Exception: ('The following error happened while compiling the node', GpuDnnConv{"
        + "x" * 2000 + "}, 'Compilation failed (return status=1): dnn_fwd.c:323:15: error: "
        "‘cudnnGetConvolutionForwardAlgorithm’ was not declared in this scope')"))
    rows = _rows(report, expect)
    assert rows["cudnn"].status == "fail"
    assert rows["cudnn"].found == "cuDNN major 9"
    why = rows["kernel.conv.checksum"].why
    assert 'set [theano] dnn = "disabled"' in why  # the hint is the knowledge row's fix
    assert len(why) < 1200  # the quoted graph is clipped, the cause kept


def test_theano_flags_enabling_dnn_over_a_lock_that_disables_it() -> None:
    """The H200 negative control: the lock says dnn.enabled=False, THEANO_FLAGS says True."""
    expect = _expect(theano_flags={**GPU_FLAGS, "dnn.enabled": "False"})
    report = _report(expect)
    report["theano"]["config"]["dnn.enabled"] = "True"
    report["gpu"].update(dnn_present=True, dnn_version=91400, dnn_msg=None)
    row = _rows(report, expect)["cudnn"]
    assert row.status == "fail"
    assert "set dnn.enabled = False" in row.why


def test_missing_driver_library_gets_the_link_hint() -> None:
    """The error pygpu logged on a machine without libcuda.so (seen here, no GPU)."""
    expect = _expect()
    report = _report(expect, gpu=False)
    report["gpu"]["init_error"] = (
        "Could not initialize pygpu, support disabled: GpuArrayException: Could not load "
        "\"libcuda.so\": libcuda.so: cannot open shared object file: No such file or directory")
    why = _rows(report, expect)["gpu.backend"].why
    assert "libcuda.so: cannot open shared object file" in why
    assert "link it to the driver's libcuda.so.1" in why


def test_hints_come_from_the_registry_handed_in() -> None:
    """Failing rows get the hint of the packs they are judged with, handed in as an argument
    and nothing ambient: Theano's undeclared-import hint with its pack, none without it;
    passing and skipped rows are left as they are."""
    error = "import theano failed: ModuleNotFoundError: No module named 'pkg_resources'"
    rows = (CheckRow("version.theano", "1.0.5", "missing", "fail", error),
            CheckRow("probe.skip", "-", "-", "skip", error),
            CheckRow("probe.pass", "-", "-", "pass", error))
    failed, skipped, passed = hinted(rows, REGISTRY)
    assert failed.why.startswith(error + " (hint: Theano imports pkg_resources")
    assert (skipped, passed) == rows[1:]
    without = Registry([pack for pack in REGISTRY if pack.name not in ("theano", "torch")])
    assert hinted(rows, without) == rows  # torch 1.10 imports pkg_resources too: its own hint


def test_a_locks_failures_get_only_the_hints_of_the_packs_it_holds() -> None:
    """huggingface/torchMoji's PyTorch environment failed `import torch` on pkg_resources,
    and verify hinted Theano's import of it (theano/gpuarray/linalg.py:3), a pack its lock
    did not hold. A Theano lock's failure quoting torchvision's Pillow error gets no PyTorch
    hint either."""
    expect = _expect()
    report = _report(expect)
    report["versions"]["theano"] = None
    report["import_errors"]["theano"] = (
        "ImportError: cannot import name 'PILLOW_VERSION' from 'PIL'")
    why = _rows(report, expect)["version.theano"].why
    assert "PILLOW_VERSION" in why and "hint" not in why
    report["import_errors"]["theano"] = "ModuleNotFoundError: No module named 'pkg_resources'"
    assert "(hint: Theano imports pkg_resources" in _rows(report, expect)["version.theano"].why


def test_cudnn_7_enabled_is_checked_against_the_lock() -> None:
    expect = _expect(theano_flags={**GPU_FLAGS, "dnn.enabled": "True"}, cudnn="7.6.5.32")
    report = _report(expect)
    report["gpu"].update(dnn_present=True, dnn_version=7605, dnn_msg=None)
    assert _rows(report, expect)["cudnn"].status == "pass"
    report["gpu"].update(dnn_version=7104)
    assert _rows(report, expect)["cudnn"].status == "fail"
    report["gpu"].update(dnn_present=False, dnn_version=None,
                         dnn_msg="Can not compile with cuDNN. cudnn.h: No such file")
    row = _rows(report, expect)["cudnn"]
    assert row.status == "fail" and "cudnn.h" in row.why


def test_driver_too_old_for_the_locked_cuda() -> None:
    expect = _expect(cuda="12.4")
    report = _report(expect)
    report["nvidia"] = {"driver_version": "470.82", "cuda_version": "11.4"}
    row = _rows(report, expect)["cuda.driver"]
    assert row.status == "fail" and "12.4" in row.why
    report["nvidia"] = {"error": "nvidia-smi not on PATH"}
    assert _rows(report, expect)["cuda.driver"].status == "skip"


@pytest.mark.parametrize("report", [{}, {"format": 2}, {"format": 1, "error": "bad request"},
                                    {"format": 1, "kernels": "nonsense", "theano": 3}])
def test_malformed_reports_fail_without_raising(report: dict[str, Any]) -> None:
    rows = check_report(report, _expect(), REGISTRY, gpu_expected=True)
    assert verdict(rows) == ExitCode.FAILED


def test_build_request_carries_what_the_probe_needs() -> None:
    expect = _expect()
    request = build_request(expect, REGISTRY)
    assert request["cpu_compare"] is True
    assert request["repeats"] == 3
    assert "blas.ldflags" in request["flags"]
    assert request["distributions"] == ["libgpuarray"]
    conv = request["kernels"][2]
    assert conv == {"name": "conv", "seed": 22, "shape": [1, 3, 8, 8],
                    "sample_indices": list(expect.kernels[2].sample_indices),
                    "channels": [3, 4, 4], "filter_size": 3, "border_mode": "half",
                    "filter_flip": True}
    assert json.loads(json.dumps(request)) == request
    assert build_request(_expect(device="cpu"), REGISTRY)["cpu_compare"] is False
    assert PROBE_SCRIPT.is_file()


# --- renderings ---------------------------------------------------------------------


def _mixed_rows() -> list[CheckRow]:
    return [CheckRow("version.numpy", "1.23.5", "1.23.5", "pass"),
            CheckRow("gpu.backend", "pygpu_activated", "not active", "fail",
                     "fell back: <libnvrtc.so> & \x1b[31mred\x1b[0m | pipe"),
            CheckRow("gpu.speedup", ">= 5x", "-", "skip", "no GPU on this run")]


def test_json_envelope() -> None:
    document = json.loads(to_json(_mixed_rows()))
    assert document["envforge"] == __version__
    assert document["kind"] == "verify" and document["format"] == 1
    assert document["verdict"] == "fail" and document["exit_code"] == 1
    assert document["counts"] == {"pass": 1, "fail": 1, "skip": 1}
    assert document["rows"][1]["why"].startswith("fell back")
    assert set(document["rows"][0]) == {"name", "expected", "found", "status", "why"}


def test_junit_is_valid_xml_with_one_testcase_per_row() -> None:
    root = ET.fromstring(to_junit(_mixed_rows()).encode())
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["version.numpy", "gpu.backend", "gpu.speedup"]
    failure = cases[1].find("failure")
    assert failure is not None and "<libnvrtc.so> &" in (failure.get("message") or "")
    assert cases[2].find("skipped") is not None
    assert cases[0].find("failure") is None and cases[0].find("skipped") is None


def test_markdown_and_html_with_chart() -> None:
    expect = _expect()
    timings = kernel_timings(_report(expect), REGISTRY)
    assert [t.speedup for t in timings] == [20.0, 20.0, 20.0]
    markdown = to_markdown(_mixed_rows(), timings)
    assert "**FAILED**: 1 passed, 1 failed, 1 skipped" in markdown
    assert "pipe" in markdown and "\\| pipe" in markdown  # a pipe cannot break the table
    assert "<svg" in markdown and "| conv | cuda |" in markdown
    svg = ET.fromstring(timing_svg(timings))
    bars = [e for e in svg.iter("{http://www.w3.org/2000/svg}rect") if e.get("height") == "15"]
    assert len(bars) == 6  # CPU and device per kernel
    widths = sorted(int(b.get("width") or 0) for b in bars)
    assert widths[:3] == [18, 18, 18] and widths[3:] == [360, 360, 360]  # 1/20 of the CPU
    page = to_html(_mixed_rows(), timings)
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert "&lt;libnvrtc.so&gt;" in page
    assert "<script" not in page and "src=" not in page and "href=" not in page


def test_markdown_without_timings_has_no_chart() -> None:
    rows = [CheckRow("device", "cpu", "cpu", "pass")]
    assert "<svg" not in to_markdown(rows)
    assert "**PASSED**" in to_markdown(rows)


@pytest.mark.parametrize(("theano", "cudnn", "status"), [
    ("1.0.5", "7.6.5.32", "pass"), ("1.0.5", "8.0.5.39", "fail"),
    # The rule is knowledge's (theano.toml [[cudnn]] conv-fails-from), not a "1.0." prefix:
    # 1.1.2 calls the same removed function, and a release with no rules is not judged.
    ("1.1.2", "8.0.5.39", "fail"), ("0.9.0", "8.0.5.39", "pass")])
def test_cudnn_rule_comes_from_the_knowledge_base(theano: str, cudnn: str, status: str) -> None:
    expect = _expect(theano_flags={**GPU_FLAGS, "dnn.enabled": "auto"}, cudnn=cudnn,
                     versions={**_expect().versions, "theano": theano})
    report = _report(expect)
    report["gpu"].update(dnn_present=True, dnn_version=cudnn_version_code(cudnn), dnn_msg=None)
    assert _rows(report, expect)["cudnn"].status == status

"""envforge's probe: what Theano really does inside a provisioned environment.

Run with the TARGET environment's Python (3.5 grammar; Theano-PyMC runs on 3.7 to 3.11),
the standard library and envforge's ``proberuntime`` only, so it can run before anything
else is known to work there::

    python probe.py < request.json > report.json

The request names the kernels to run; the report says what Theano saw (versions,
config, BLAS, GPU, cuDNN) and what each kernel computed, compiled to and cost. It
judges nothing: envforge compares the report with the lock's expectations
(``envforge.verify``). Every failure is caught and written into the report as a
string, because a half-broken environment is exactly what the probe exists to
describe. Its parts lie beside it: ``probe_sections`` (config, BLAS, GPU, nvidia-smi),
``probe_kernels`` (compiled, run and timed) and ``probe_gemm`` (GEMM against raw cuBLAS).

The kernel inputs are defined here (and in ``proberuntime``) and in
``envforge/expectations/``; both must draw the same numbers from
``numpy.random.RandomState(seed)`` in the same order.
"""

import logging
import sys

import proberuntime
from probe_kernels import run_kernel
from probe_sections import LogCapture, blas_section, gpu_section, nvidia_section, theano_section

# What the report always states about Theano's config (1.0.5 spelling; 1.1 uses "__").
BASE_FLAGS = (
    "device", "floatX", "mode", "cxx", "blas.ldflags", "gcc.cxxflags", "dnn.enabled",
    "gpuarray.preallocate", "base_compiledir", "compiledir", "allow_gc",
)
MODULES = ("numpy", "scipy", "six", "pygpu", "theano")


def probe(request):
    """Everything the report says, as a JSON-ready dict."""
    report = proberuntime.new_report()
    log = LogCapture()
    logging.getLogger("theano").addHandler(log)
    # Theano says some things through warnings.warn (a cuDNN newer than it knows, say).
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addHandler(log)
    modules = {}
    for name in MODULES:
        modules[name] = proberuntime.import_module(name, report)
    theano, np = modules["theano"], modules["numpy"]
    if theano is not None:
        import theano.tensor  # noqa: F401  (attribute access below needs the submodule)
    report["distributions"] = proberuntime.distribution_versions(
        list(request.get("distributions", [])))
    flags = list(BASE_FLAGS) + [f for f in request.get("flags", []) if f not in BASE_FLAGS]
    report["theano"] = theano_section(theano, flags, log) if theano is not None else None
    report["blas"] = blas_section(theano, np)
    report["gpu"] = gpu_section(theano, log, report["import_errors"].get("pygpu"))
    report["nvidia"] = nvidia_section()
    # A comparison is only worth its second compile when the GPU back-end really runs.
    cpu_compare = bool(request.get("cpu_compare")) and report["gpu"]["pygpu_activated"] is True
    report["cpu_compare"] = cpu_compare
    gpu_active = report["gpu"]["pygpu_activated"] is True
    report["kernels"] = proberuntime.run_kernels(request, lambda kernel, repeats: run_kernel(
        theano, np, kernel, repeats, cpu_compare, gpu_active))
    if theano is not None:  # warnings logged while compiling, too
        report["theano"]["log"] = log.lines()
    return report


if __name__ == "__main__":
    sys.exit(proberuntime.main(probe))

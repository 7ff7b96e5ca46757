"""The Theano probe's GEMM on the device: Theano's against raw cuBLAS on the same resident
arrays; run by the environment's Python (3.5 grammar) where the GPU back-end is active."""

import os
import time

from proberuntime import error_text

GEMM_ITERATIONS = 20  # resident GEMMs timed together: a 4096 one takes ~3 ms on an H200
MAX_ERROR = 4000  # a failed compile quotes the whole node; enough to name the cause


def is_gpu_op(op):
    return type(op).__module__.startswith("theano.gpuarray")


def gemm_timing(theano, np, values, iterations, with_copies_s):
    """Theano's GEMM with A, B and C resident on the GPU, and raw cuBLAS SGEMM on the same
    arrays through the libcublas that libgpuarray loaded: the ratio says what Theano's
    wrapping costs, with PCIe copies out of the picture (they are in ``with_copies_s``)."""
    out = {"resident_s": None, "with_copies_s": with_copies_s, "tflops": None,
           "cublas_s": None, "cublas_tflops": None, "ratio": None, "cublas_library": None,
           "iterations": iterations, "error": None}
    try:
        a_host, b_host = values
        rows, inner = a_host.shape
        cols = b_host.shape[1]
        a, b = theano.shared(a_host, name="a"), theano.shared(b_host, name="b")
        c = theano.shared(np.zeros((rows, cols), dtype=a_host.dtype), name="c")
        fn = theano.function([], [], updates=[(c, theano.tensor.dot(a, b))])
        if not any(is_gpu_op(node.op) for node in fn.maker.fgraph.toposort()):
            out["error"] = "the resident GEMM did not compile to GPU ops"
            return out

        def device(variable):
            return variable.get_value(borrow=True, return_internal_type=True)

        out["resident_s"] = _best_of(lambda: fn(), lambda: device(c).sync(), iterations)
        flops = 2.0 * rows * cols * inner
        out["tflops"] = flops / out["resident_s"] / 1e12
        if str(a_host.dtype) != "float32":
            out["error"] = "cuBLAS comparison needs float32 (SGEMM), floatX is %s" % a_host.dtype
            return out
        with open("/proc/self/maps") as maps:
            text = maps.read()
        out["cublas_library"] = mapped_library(text, "libcublas")
        driver = mapped_library(text, "libcuda")
        if out["cublas_library"] is None or driver is None:
            out["error"] = "libcublas or libcuda is not loaded in this process"
            return out
        out["cublas_s"] = _cublas_sgemm_s(out["cublas_library"], driver, device(a).context,
                                          device(a), device(b), device(c), iterations)
        out["cublas_tflops"] = flops / out["cublas_s"] / 1e12
        out["ratio"] = out["cublas_s"] / out["resident_s"]
    except Exception as exc:
        out["error"] = error_text(exc)[:MAX_ERROR]
    return out


def _best_of(call, sync, iterations):
    """Seconds per call: one warm-up, then ``iterations`` calls timed together, synced."""
    call()
    sync()
    start = time.perf_counter()
    for _ in range(iterations):
        call()
    sync()
    return (time.perf_counter() - start) / iterations


def mapped_library(maps_text, stem):
    """The path of the shared library ``stem`` (``libcublas``) as /proc/self/maps lists it:
    the copy this process really loaded, not one the loader might find by name."""
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        name = os.path.basename(path)
        if name == stem + ".so" or name.startswith(stem + ".so."):
            return path
    return None


def _cublas_sgemm_s(cublas_path, cuda_path, context, a, b, c, iterations):
    """Raw cublasSgemm_v2 on pygpu arrays, in pygpu's CUDA context; seconds per call.

    Row-major C = A B is column-major C^T = B^T A^T, so B goes first. ``gpudata`` is
    the device pointer (as theano/gpuarray/linalg.py passes it to cuSOLVER).
    """
    import ctypes
    cublas, cuda = ctypes.CDLL(cublas_path), ctypes.CDLL(cuda_path)
    rows, inner = a.shape
    cols = b.shape[1]
    handle = ctypes.c_void_p()
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)

    def check(status, what):
        if status != 0:
            raise RuntimeError("%s returned %d" % (what, status))

    def sgemm():
        check(cublas.cublasSgemm_v2(
            handle, 0, 0, cols, rows, inner, ctypes.byref(alpha), ctypes.c_void_p(b.gpudata),
            cols, ctypes.c_void_p(a.gpudata), inner, ctypes.byref(beta),
            ctypes.c_void_p(c.gpudata), cols), "cublasSgemm_v2")

    with context:
        check(cublas.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate_v2")
        try:
            return _best_of(sgemm, lambda: check(cuda.cuCtxSynchronize(), "cuCtxSynchronize"),
                            iterations)
        finally:
            cublas.cublasDestroy_v2(handle)

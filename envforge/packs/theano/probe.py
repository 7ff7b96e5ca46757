"""envforge's probe: what Theano really does inside a provisioned environment.

Run with the TARGET environment's Python (3.7 to 3.11), standard library only, so it
can run before anything else is known to work there::

    python probe.py < request.json > report.json

The request names the kernels to run; the report says what Theano saw (versions,
config, BLAS, GPU, cuDNN) and what each kernel computed, compiled to and cost. It
judges nothing: envforge compares the report with the lock's expectations
(``envforge.verify``). Every failure is caught and written into the report as a
string, because a half-broken environment is exactly what the probe exists to
describe. Theano prints to stdout in places, so fd 1 is pointed at stderr while
the probe works and the JSON goes to a saved copy of the original stdout.

The kernel inputs are defined here and in ``envforge/expectations.py``; both must
draw the same numbers from ``numpy.random.RandomState(seed)`` in the same order.
"""

import json
import logging
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import traceback

REPORT_FORMAT = 1
# What the report always states about Theano's config (1.0.5 spelling; 1.1 uses "__").
BASE_FLAGS = (
    "device", "floatX", "mode", "cxx", "blas.ldflags", "gcc.cxxflags", "dnn.enabled",
    "gpuarray.preallocate", "base_compiledir", "compiledir", "allow_gc",
)
MODULES = ("numpy", "scipy", "six", "pygpu", "theano")
GEMM_ITERATIONS = 20  # resident GEMMs timed together: a 4096 one takes ~3 ms on an H200
MAX_ERROR = 4000  # a failed compile quotes the whole node; enough to name the cause


def _error_text(exc):
    """One line for an exception: its type and message (pygpu's messages are bytes)."""
    args = getattr(exc, "args", ())
    if len(args) == 1 and isinstance(args[0], bytes):
        message = args[0].decode("utf-8", "replace")
    else:
        message = str(exc)
    return ("%s: %s" % (type(exc).__name__, message)).strip()


class _LogCapture(logging.Handler):
    """Keeps Theano's log records: a GPU init failure is only ever logged, never raised."""

    def __init__(self):
        logging.Handler.__init__(self, level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)

    def lines(self):
        out = []
        for record in self.records:
            line = "%s %s: %s" % (record.levelname, record.name, record.getMessage())
            if record.exc_info and record.exc_info[1] is not None:
                line += " (%s)" % _error_text(record.exc_info[1])
            out.append(line)
        return out

    def gpu_init_error(self):
        """The last GPU-back-end error Theano logged, with the exception that caused it."""
        found = None
        for record in self.records:
            if record.name.startswith("theano.gpuarray") and record.levelno >= logging.ERROR:
                found = record.getMessage()
                if record.exc_info and record.exc_info[1] is not None:
                    found += ": " + _error_text(record.exc_info[1])
        return found


def _import(name, report):
    try:
        module = __import__(name)
    except Exception as exc:  # an ImportError, or whatever a broken package raises
        report["versions"][name] = None
        report["import_errors"][name] = _error_text(exc)
        return None
    report["versions"][name] = str(getattr(module, "__version__", "unknown"))
    return module


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _distribution_versions(names):
    """Installed distributions by name; Python 3.7 has no importlib.metadata.

    The fallback reads ``name-version.dist-info`` / ``.egg-info`` folder names on
    sys.path rather than importing pkg_resources, which a uv venv does not have.
    """
    try:
        from importlib import metadata
    except ImportError:
        metadata = None
    out = dict((name, None) for name in names)
    if metadata is not None:
        for name in names:
            try:
                out[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                out[name] = None
        return out
    wanted = dict((_canonical(name), name) for name in names)
    for folder in sys.path:
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            stem, dot, suffix = entry.rpartition(".")
            if suffix not in ("dist-info", "egg-info") or not dot:
                continue
            name, _, version = stem.partition("-")
            key = wanted.get(_canonical(name))
            if key is not None and out[key] is None and version:
                out[key] = version.split("-py")[0]
    return out


def _config_value(config, name):
    """A Theano flag by its dotted name; 1.1 spells nested flags with ``__``."""
    try:
        value = config
        for part in name.split("."):
            value = getattr(value, part)
    except AttributeError:
        value = getattr(config, name.replace(".", "__"))
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return str(value)


def _theano_section(theano, flags, log):
    config = theano.config
    values, errors = {}, {}
    for name in flags:
        try:
            values[name] = _config_value(config, name)
        except Exception as exc:
            errors[name] = _error_text(exc)
    try:
        from theano import configparser
        files = list(configparser.config_files)
    except Exception:
        raw = os.environ.get("THEANORC", "~/.theanorc")
        files = [os.path.expanduser(p) for p in raw.split(os.pathsep)]
    return {
        "config": values,
        "config_errors": errors,
        "config_files": [{"path": p, "exists": os.path.isfile(p)} for p in files],
        "theanorc_env": os.environ.get("THEANORC"),
        "theano_flags_env": os.environ.get("THEANO_FLAGS"),
        "log": log.lines(),
    }


def _blas_section(theano, numpy):
    out = {"ldflags": None, "libraries": None, "implementation": None, "error": None,
           "numpy_blas": None}
    if numpy is not None:
        info = getattr(getattr(numpy, "__config__", None), "blas_opt_info", None)
        if isinstance(info, dict):
            out["numpy_blas"] = list(info.get("libraries", []))
    if theano is None:
        return out
    try:
        import theano.tensor.blas as blas
        out["ldflags"] = str(theano.config.blas.ldflags)
        out["libraries"] = list(blas.ldflags())
        # Without ldflags Theano's Gemm/Dot22 C code calls NumPy's C API instead of BLAS.
        out["implementation"] = "c-blas" if theano.config.blas.ldflags else "numpy-c-api"
    except Exception as exc:
        out["error"] = _error_text(exc)
    return out


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None if value is None else str(value)


def _gpu_section(theano, log, pygpu_error):
    out = {"pygpu_activated": None, "init_error": None, "devname": None, "bin_id": None,
           "compute_capability": None, "total_gmem": None, "dnn_present": None,
           "dnn_msg": None, "dnn_version": None, "error": None}
    if theano is None:
        return out
    # Theano imports its GPU back-end itself when the device asks for one; importing it
    # here on a CPU device could only add errors the configuration never triggers.
    gpuarray = sys.modules.get("theano.gpuarray")
    if gpuarray is None:
        out["pygpu_activated"] = False
        out["dnn_msg"] = "not checked: theano.gpuarray was not imported (device is cpu)"
        return out
    out["pygpu_activated"] = bool(getattr(gpuarray, "pygpu_activated", False))
    init_error = log.gpu_init_error()
    if pygpu_error and (init_error is None or "could not be imported" in init_error):
        init_error = "pygpu import failed: " + pygpu_error
    out["init_error"] = init_error
    if not out["pygpu_activated"]:
        out["dnn_msg"] = "not checked: the GPU back-end is not active"
        return out
    try:
        context = gpuarray.type.get_context(None)
        out["devname"] = _text(context.devname)
        out["bin_id"] = _text(context.bin_id)
        out["total_gmem"] = int(context.total_gmem)
        match = re.search(r"(\d+)(\d)$", out["bin_id"] or "")
        if match:
            out["compute_capability"] = "%s.%s" % (match.group(1), match.group(2))
    except Exception as exc:
        out["error"] = _error_text(exc)
    try:
        from theano.gpuarray import dnn
        out["dnn_present"] = bool(dnn.dnn_present())
        out["dnn_msg"] = _text(dnn.dnn_present.msg)
        if out["dnn_present"]:
            out["dnn_version"] = int(dnn.version())
    except Exception as exc:
        out["dnn_msg"] = (out["dnn_msg"] or "") + " error: " + _error_text(exc)
    return out


def _nvidia_section():
    out = {"driver_version": None, "cuda_version": None, "gpus": [], "error": None}
    smi = shutil.which("nvidia-smi")
    if smi is None:
        out["error"] = "nvidia-smi not on PATH"
        return out
    try:
        query = subprocess.run(
            [smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            timeout=30)
        header = subprocess.run([smi], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=30)
    except Exception as exc:
        out["error"] = _error_text(exc)
        return out
    if query.returncode != 0:
        out["error"] = (query.stderr or query.stdout).strip() or "nvidia-smi failed"
        return out
    for line in query.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2:
            out["gpus"].append(parts[0])
            out["driver_version"] = parts[1]
    match = re.search(r"CUDA Version:\s*([0-9.]+)", header.stdout)
    if match:
        out["cuda_version"] = match.group(1)
    return out


# --- kernels -----------------------------------------------------------------------


def _inputs(np, kernel, float_x):
    """The kernel's inputs: the same draws, in the same order, as envforge/expectations.py."""
    rng = np.random.RandomState(kernel["seed"])
    shape = [int(n) for n in kernel["shape"]]
    name = kernel["name"]

    def signed(dims, scale=1.0):
        return ((rng.rand(*dims) * 2.0 - 1.0) * scale).astype(float_x)

    if name == "elementwise":
        return [rng.rand(*shape).astype(float_x)]
    if name == "gemm":
        a = rng.rand(*shape).astype(float_x)
        b = rng.rand(*shape).astype(float_x)
        return [a, b]
    if name == "scan":
        steps, units = shape
        return [rng.rand(steps, units).astype(float_x),
                signed((units, units), 1.0 / math.sqrt(units)), rng.rand(units).astype(float_x)]
    if name == "grad":
        batch, n_in, hidden, n_out = shape
        return [rng.rand(batch, n_in).astype(float_x), rng.rand(batch, n_out).astype(float_x),
                signed((n_in, hidden), 1.0 / math.sqrt(n_in)), signed((hidden,), 0.1),
                signed((hidden, n_out), 1.0 / math.sqrt(hidden)), signed((n_out,), 0.1)]
    if name == "softmax_xent":
        batch, features, classes = shape
        return [rng.rand(batch, features).astype(float_x), signed((features, classes)),
                signed((classes,), 0.1), rng.randint(0, classes, size=batch).astype("int64")]
    if name == "train":
        examples, features, _ = shape
        return [signed((examples, features)),
                rng.randint(0, 2, size=examples).astype(float_x)]
    if name == "random":
        return []
    if name == "conv":
        channels = [int(c) for c in kernel["channels"]]
        k = int(kernel.get("filter_size", 3))
        values = [rng.rand(*shape).astype(float_x)]
        for c_in, c_out in zip(channels, channels[1:]):
            fan_in = c_in * k * k
            # He-uniform: keeps activations the same size through ReLU layers.
            w = (rng.rand(c_out, c_in, k, k) * 2.0 - 1.0) * math.sqrt(6.0 / fan_in)
            values.append(w.astype(float_x))
        return values
    raise ValueError("unknown kernel %r" % name)


def _graph(theano, kernel):
    """Symbolic inputs and outputs of a kernel that is one pure function of its inputs."""
    tensor = theano.tensor
    name = kernel["name"]
    if name == "elementwise":
        x = tensor.vector("x")
        return [x], [tensor.exp(x)]
    if name == "gemm":
        a, b = tensor.matrix("a"), tensor.matrix("b")
        return [a, b], [tensor.dot(a, b)]
    if name == "scan":
        x, w, h0 = tensor.matrix("x"), tensor.matrix("W"), tensor.vector("h0")
        hs, _ = theano.scan(lambda x_t, h, w: tensor.tanh(tensor.dot(w, h) + x_t),
                            sequences=x, outputs_info=h0, non_sequences=w)
        return [x, w, h0], [hs]
    if name == "grad":
        x, target = tensor.matrix("x"), tensor.matrix("target")
        params = [tensor.matrix("W1"), tensor.vector("b1"), tensor.matrix("W2"),
                  tensor.vector("b2")]
        w1, b1, w2, b2 = params
        y = tensor.dot(tensor.tanh(tensor.dot(x, w1) + b1), w2) + b2
        loss = 0.5 * tensor.sqr(y - target).sum() / x.shape[0]
        return [x, target] + params, list(tensor.grad(loss, params))
    if name == "softmax_xent":
        x, w, b = tensor.matrix("x"), tensor.matrix("W"), tensor.vector("b")
        labels = tensor.lvector("labels")
        probabilities = tensor.nnet.softmax(tensor.dot(x, w) + b)
        return [x, w, b, labels], [probabilities,
                                   tensor.nnet.categorical_crossentropy(probabilities, labels)]
    if name == "conv":
        from theano.tensor.nnet import conv2d
        x = tensor.tensor4("x")
        inputs, h = [x], x
        for i in range(len(kernel["channels"]) - 1):
            w = tensor.tensor4("w%d" % (i + 1))
            inputs.append(w)
            h = conv2d(h, w, border_mode=kernel.get("border_mode", "half"),
                       filter_flip=bool(kernel.get("filter_flip", True)))
            h = tensor.maximum(h, 0)
        return inputs, [h]
    raise ValueError("unknown kernel %r" % name)


def _flat(np, outputs):
    """Several outputs as one vector, in order (one output keeps its shape)."""
    arrays = [np.asarray(o) for o in outputs]
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate([a.ravel() for a in arrays])


def _build(theano, np, kernel, values, mode):
    """Compile a kernel: a call that computes its output from scratch, and its functions.

    random and train hold state in shared variables (the MRG streams, the weights): the
    call puts their first values back, so every run computes the same thing.
    """
    name = kernel["name"]
    if name == "random":
        from theano.sandbox.rng_mrg import MRG_RandomStreams
        streams = MRG_RandomStreams(int(kernel["seed"]))
        shape = [int(n) for n in kernel["shape"]]
        fn = theano.function([], [streams.uniform((shape[0],)), streams.normal((shape[1],))],
                             mode=mode)
        return _resetting(np, fn, [update[0] for update in streams.state_updates], lambda: fn()), [fn]
    if name == "train":
        return _train(theano, np, kernel, values, mode)
    inputs, outputs = _graph(theano, kernel)
    fn = theano.function(inputs, outputs, mode=mode)
    return (lambda: _flat(np, fn(*values))), [fn]


def _resetting(np, fn, shared, call):
    initial = [s.get_value(borrow=False) for s in shared]

    def run():
        for variable, value in zip(shared, initial):
            variable.set_value(value, borrow=False)
        return _flat(np, call())
    return run


def _train(theano, np, kernel, values, mode):
    """Logistic regression, full-batch SGD from zero weights: the loss of every step."""
    tensor = theano.tensor
    x_value, y_value = values
    steps = int(kernel["shape"][2])
    rate = float(kernel.get("params", {}).get("learning_rate", 0.5))
    float_x = str(theano.config.floatX)
    w = theano.shared(np.zeros(x_value.shape[1], dtype=float_x), name="w")
    b = theano.shared(np.asarray(0.0, dtype=float_x), name="b")
    x, y = tensor.matrix("X"), tensor.vector("y")
    p = tensor.nnet.sigmoid(tensor.dot(x, w) + b)
    loss = tensor.nnet.binary_crossentropy(p, y).mean()
    grad_w, grad_b = tensor.grad(loss, [w, b])
    step = theano.function([x, y], loss, mode=mode, updates=[
        (w, w - _scalar(np, rate, float_x) * grad_w),
        (b, b - _scalar(np, rate, float_x) * grad_b)])

    def call():
        losses = [step(x_value, y_value) for _ in range(steps)]
        return [np.asarray(losses), w.get_value(), np.asarray([b.get_value()])]
    return _resetting(np, step, [w, b], call), [step]


def _scalar(np, value, float_x):
    """A constant in floatX, so float32 graphs stay float32."""
    return np.asarray(value, dtype=float_x)


def _is_gpu_op(op):
    return type(op).__module__.startswith("theano.gpuarray")


def _scan_section(fn):
    """Which implementation Theano's Scan ops run: the compiled C loop or the Python one.

    Scan.make_thunk binds either a closure over scan_perform_ext (the Cython module
    compiled from scan_perform.c) or Scan.execute (the Python fallback) as the thunk's
    first default argument ([TP] theano/scan_module/scan_op.py, make_thunk).
    """
    out = {"implementation": None, "module": None, "version": None, "inner_ops": [],
           "error": None}
    vm = getattr(fn, "fn", None)
    nodes, thunks = getattr(vm, "nodes", None), getattr(vm, "thunks", None)
    if nodes is None or thunks is None:
        out["error"] = "the compiled function exposes no thunks (%s)" % type(vm).__name__
        return out
    found = []
    for node, thunk in zip(nodes, thunks):
        if type(node.op).__name__ != "Scan":
            continue
        inner = getattr(getattr(node.op, "fn", None), "maker", None)
        if inner is not None:
            out["inner_ops"] += [type(n.op).__name__ for n in inner.fgraph.toposort()]
        perform = (getattr(thunk, "__defaults__", None) or [None])[0]
        code = getattr(perform, "__code__", None)
        if code is not None and "scan_perform_ext" in code.co_freevars:
            found.append("c")
        elif getattr(perform, "__name__", None) == "execute":
            found.append("python")
        else:
            found.append("unknown")
    if not found:
        out["error"] = "no Scan op in the compiled graph"
        return out
    out["implementation"] = found[0] if len(set(found)) == 1 else "mixed"
    ext = sys.modules.get("theano.scan_module.scan_perform_ext")
    if ext is not None:
        compiled = sys.modules.get(getattr(getattr(ext, "perform", None), "__module__", ""))
        out["module"] = getattr(compiled, "__file__", None)
        out["version"] = getattr(ext, "version", None)
    return out


def _run(theano, np, kernel, values, mode, repeats):
    """Compile, run once (compile time), then the best of ``repeats`` runs."""
    out = {"ops": None, "gpu_ops": None, "uses_gpu": None, "compile_s": None, "run_s": None,
           "error": None}
    result = None
    try:
        start = time.perf_counter()
        call, functions = _build(theano, np, kernel, values, mode)
        result = np.asarray(call())
        out["compile_s"] = time.perf_counter() - start
        nodes = [node for fn in functions for node in fn.maker.fgraph.toposort()]
        out["ops"] = [type(node.op).__name__ for node in nodes]
        gpu = [type(node.op).__name__ for node in nodes if _is_gpu_op(node.op)]
        if kernel["name"] == "scan":
            out["scan"] = _scan_section(functions[0])
            gpu += [op for op in out["scan"]["inner_ops"] if op.startswith("Gpu")]
        out["gpu_ops"] = gpu
        out["uses_gpu"] = bool(gpu)
        best = None
        for _ in range(repeats):
            start = time.perf_counter()
            np.asarray(call())
            took = time.perf_counter() - start
            best = took if best is None else min(best, took)
        out["run_s"] = best
    except Exception as exc:
        out["error"] = _error_text(exc)[:MAX_ERROR]
        out["traceback"] = traceback.format_exc()[-MAX_ERROR:]
    return out, result


# --- GEMM on the device: Theano against raw cuBLAS --------------------------------------


def _gemm_timing(theano, np, values, iterations, with_copies_s):
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
        if not any(_is_gpu_op(node.op) for node in fn.maker.fgraph.toposort()):
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
        out["error"] = _error_text(exc)[:MAX_ERROR]
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


def _summary(np, result, indices):
    flat = np.asarray(result, dtype=np.float64).ravel()
    finite = np.isfinite(flat)
    out = {"output_shape": list(result.shape), "dtype": str(result.dtype),
           "nonfinite": int(flat.size - int(finite.sum())), "checksum": None, "samples": None,
           "error": None}
    if out["nonfinite"] == 0:
        out["checksum"] = float(flat.sum())
    bad = [i for i in indices if not -flat.size <= i < flat.size]
    if bad:
        out["error"] = "sample indices %s outside an output of %d values" % (bad, flat.size)
        return out
    samples = [float(flat[i]) for i in indices]
    out["samples"] = [v if math.isfinite(v) else None for v in samples]
    return out


def _kernel(theano, np, kernel, repeats, cpu_compare, gpu_active=False):
    entry = {"name": kernel.get("name"), "seed": kernel.get("seed"),
             "shape": kernel.get("shape"), "dtype": None, "output_shape": None,
             "checksum": None, "samples": None, "nonfinite": None, "ops": None,
             "gpu_ops": None, "uses_gpu": None, "compile_s": None, "run_s": None,
             "error": None, "cpu": None, "speedup": None}
    if theano is None or np is None:
        entry["error"] = "theano or numpy could not be imported"
        return entry
    try:
        float_x = str(theano.config.floatX)
        values = _inputs(np, kernel, float_x)
    except Exception as exc:
        entry["error"] = "building inputs: " + _error_text(exc)
        return entry
    mode = theano.compile.mode.get_default_mode()
    run, result = _run(theano, np, kernel, values, mode, repeats)
    entry.update(run)
    if result is not None:
        summary = _summary(np, result, [int(i) for i in kernel.get("sample_indices", [])])
        error = summary.pop("error")
        entry.update(summary)
        if error and not entry["error"]:
            entry["error"] = error
    if gpu_active and kernel.get("name") == "gemm" and entry["run_s"]:
        entry["gemm_timing"] = _gemm_timing(theano, np, values, GEMM_ITERATIONS, entry["run_s"])
    if cpu_compare:
        # The same graph with the GPU optimisations left out: Theano's own way to compare.
        cpu, _ = _run(theano, np, kernel, values, mode.excluding("gpuarray"), repeats)
        entry["cpu"] = cpu
        if cpu["run_s"] and entry["run_s"]:
            entry["speedup"] = cpu["run_s"] / entry["run_s"]
    return entry


def probe(request):
    """Everything the report says, as a JSON-ready dict."""
    started = time.perf_counter()
    report = {
        "format": REPORT_FORMAT,
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "implementation": platform.python_implementation(),
                   "platform": platform.platform(), "cpu_count": os.cpu_count()},
        "versions": {}, "import_errors": {}, "distributions": {},
    }
    log = _LogCapture()
    logging.getLogger("theano").addHandler(log)
    # Theano says some things through warnings.warn (a cuDNN newer than it knows, say).
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addHandler(log)
    modules = {}
    for name in MODULES:
        modules[name] = _import(name, report)
    theano, np = modules["theano"], modules["numpy"]
    if theano is not None:
        import theano.tensor  # noqa: F401  (attribute access below needs the submodule)
    report["distributions"] = _distribution_versions(list(request.get("distributions", [])))
    flags = list(BASE_FLAGS) + [f for f in request.get("flags", []) if f not in BASE_FLAGS]
    report["theano"] = _theano_section(theano, flags, log) if theano is not None else None
    report["blas"] = _blas_section(theano, np)
    report["gpu"] = _gpu_section(theano, log, report["import_errors"].get("pygpu"))
    report["nvidia"] = _nvidia_section()
    repeats = max(1, int(request.get("repeats", 3)))
    # A comparison is only worth its second compile when the GPU back-end really runs.
    cpu_compare = bool(request.get("cpu_compare")) and report["gpu"]["pygpu_activated"] is True
    report["cpu_compare"] = cpu_compare
    gpu_active = report["gpu"]["pygpu_activated"] is True
    report["kernels"] = [_kernel(theano, np, k, repeats, cpu_compare, gpu_active)
                         for k in request.get("kernels", [])]
    if theano is not None:  # warnings logged while compiling, too
        report["theano"]["log"] = log.lines()
    report["elapsed_s"] = time.perf_counter() - started
    return report


def _finite(value):
    """JSON has no NaN or Infinity: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return dict((k, _finite(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def main():
    sys.stdout.flush()
    report_stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever Theano or a compiler prints lands on stderr
    status = 0
    try:
        request = json.load(sys.stdin)
        if not isinstance(request, dict):
            raise ValueError("the request must be a JSON object")
        report = probe(request)
    except Exception as exc:
        report = {"format": REPORT_FORMAT, "error": _error_text(exc),
                  "traceback": traceback.format_exc()[-4000:]}
        status = 2
    json.dump(_finite(report), report_stream, sort_keys=True, indent=1, allow_nan=False)
    report_stream.write("\n")
    report_stream.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())

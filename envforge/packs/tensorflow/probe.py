"""envforge's TensorFlow probe: what TensorFlow 1.x really does inside an environment.

Run with the TARGET environment's Python (3.5 to 3.7 for TensorFlow 1.15), standard
library only until TensorFlow is imported, so it can describe a half-broken environment::

    python probe.py < request.json > report.json

It reports versions, the devices TensorFlow lists, the variables it was started with, the
GPU libraries its loader asks for (opened with ctypes, as its dso_loader would), and runs
the core's kernels (``elementwise``, ``gemm``, ``conv``) in a graph session. It judges
nothing: envforge compares the report with the lock (``envforge.verify`` and the pack's
``verify.py``). The inputs are drawn as ``envforge/expectations.py`` draws them, from
``numpy.random.RandomState(seed)`` in the same order; Theano's conv is a true convolution
(its filters flipped), so the filters are flipped here before TensorFlow's cross-correlation.
"""

import ctypes
import json
import math
import os
import platform
import re
import sys
import time
import traceback

REPORT_FORMAT = 1
MODULES = ("numpy", "tensorflow")
KERNELS = ("elementwise", "gemm", "conv")


def _error_text(exc):
    return ("%s: %s" % (type(exc).__name__, exc)).strip()


def _import(name, report):
    try:
        module = __import__(name)
    except Exception as exc:  # ImportError, or the TypeError protobuf 4 raises in _pb2 files
        report["versions"][name] = None
        report["import_errors"][name] = _error_text(exc)
        return None
    report["versions"][name] = str(getattr(module, "__version__", "unknown"))
    return module


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _distribution_versions(names):
    """Installed distributions by name, read from dist-info folder names (Python 3.7 has
    no importlib.metadata)."""
    out = dict((name, None) for name in names)
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


def _libraries(names):
    """Each library the GPU build dlopens: loaded, or the loader's error."""
    out = {}
    for name in names:
        try:
            ctypes.CDLL(name)
            out[name] = None
        except OSError as exc:
            out[name] = str(exc)
    return out


def _devices(tf):
    try:
        from tensorflow.python.client import device_lib
        return [{"name": d.name, "type": d.device_type,
                 "description": getattr(d, "physical_device_desc", "") or ""}
                for d in device_lib.list_local_devices()], None
    except Exception as exc:
        return [], _error_text(exc)


def _inputs(np, kernel, float_x):
    rng = np.random.RandomState(kernel["seed"])
    shape = [int(n) for n in kernel["shape"]]
    name = kernel["name"]
    if name == "elementwise":
        return [rng.rand(*shape).astype(float_x)]
    if name == "gemm":
        a = rng.rand(*shape).astype(float_x)
        return [a, rng.rand(*shape).astype(float_x)]
    if name == "conv":
        channels = [int(c) for c in kernel["channels"]]
        k = int(kernel.get("filter_size", 3))
        values = [rng.rand(*shape).astype(float_x)]
        for c_in, c_out in zip(channels, channels[1:]):
            w = (rng.rand(c_out, c_in, k, k) * 2.0 - 1.0) * math.sqrt(6.0 / (c_in * k * k))
            values.append(w.astype(float_x))
        return values
    raise ValueError("the TensorFlow probe runs %s, not %r" % (", ".join(KERNELS), name))


def _graph(tf, kernel, values, device):
    """The kernel as a TensorFlow graph on ``device``: (placeholders, output)."""
    name = kernel["name"]
    with tf.device(device):
        holders = [tf.compat.v1.placeholder(v.dtype, v.shape) for v in values]
        if name == "elementwise":
            return holders, tf.exp(holders[0])
        if name == "gemm":
            return holders, tf.matmul(holders[0], holders[1])
        padding = {"half": "SAME", "valid": "VALID"}[kernel.get("border_mode", "half")]
        h = tf.transpose(holders[0], [0, 2, 3, 1])  # NCHW -> NHWC: TF's CPU conv wants NHWC
        for w in holders[1:]:
            if kernel.get("filter_flip", True):
                w = w[:, :, ::-1, ::-1]
            h = tf.nn.relu(tf.nn.conv2d(h, tf.transpose(w, [2, 3, 1, 0]), [1, 1, 1, 1],
                                        padding))
        return holders, tf.transpose(h, [0, 3, 1, 2])


def _summary(np, result, indices):
    flat = np.asarray(result, dtype=np.float64).ravel()
    nonfinite = int(flat.size - int(np.isfinite(flat).sum()))
    out = {"output_shape": list(result.shape), "dtype": str(result.dtype),
           "nonfinite": nonfinite, "checksum": float(flat.sum()) if not nonfinite else None,
           "samples": None, "error": None}
    if any(not -flat.size <= i < flat.size for i in indices):
        out["error"] = "sample indices outside an output of %d values" % flat.size
        return out
    out["samples"] = [float(flat[i]) if math.isfinite(flat[i]) else None for i in indices]
    return out


def _kernel(tf, np, kernel, float_x, device, repeats):
    entry = {"name": kernel.get("name"), "seed": kernel.get("seed"), "shape": kernel.get("shape"),
             "output_shape": None, "checksum": None, "samples": None, "nonfinite": None,
             "ops": None, "gpu_ops": None, "uses_gpu": None, "run_s": None, "error": None}
    if tf is None or np is None:
        entry["error"] = "tensorflow or numpy could not be imported"
        return entry
    try:
        values = _inputs(np, kernel, float_x)
        graph = tf.Graph()
        with graph.as_default():
            holders, output = _graph(tf, kernel, values, device)
            config = tf.compat.v1.ConfigProto(log_device_placement=False)
            with tf.compat.v1.Session(graph=graph, config=config) as session:
                feed = dict(zip(holders, values))
                best, result = None, None
                for _ in range(repeats):
                    started = time.perf_counter()
                    result = session.run(output, feed_dict=feed)
                    took = time.perf_counter() - started
                    best = took if best is None else min(best, took)
        entry["run_s"] = best
        entry["ops"] = sorted(set(op.type for op in graph.get_operations()))
        entry["gpu_ops"] = sorted(set(op.type for op in graph.get_operations()
                                      if "GPU" in (op.device or "").upper()))
        entry["uses_gpu"] = bool(entry["gpu_ops"])
    except Exception as exc:
        entry["error"] = _error_text(exc)
        return entry
    summary = _summary(np, result, [int(i) for i in kernel.get("sample_indices", [])])
    error = summary.pop("error")
    entry.update(summary)
    entry["error"] = error
    return entry


def probe(request):
    started = time.perf_counter()
    report = {
        "format": REPORT_FORMAT,
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "implementation": platform.python_implementation(),
                   "platform": platform.platform(), "cpu_count": os.cpu_count()},
        "versions": {}, "import_errors": {}, "distributions": {},
    }
    modules = dict((name, _import(name, report)) for name in MODULES)
    tf, np = modules["tensorflow"], modules["numpy"]
    report["distributions"] = _distribution_versions(list(request.get("distributions", [])))
    wanted = request.get("tensorflow") or {}
    section = {"variables": dict((name, os.environ.get(name))
                                 for name in wanted.get("variables", [])),
               "libraries": _libraries(wanted.get("gpu_libraries", [])),
               "devices": [], "devices_error": None, "gpu_available": None}
    if tf is not None:
        section["devices"], section["devices_error"] = _devices(tf)
        section["gpu_available"] = any(d["type"] == "GPU" for d in section["devices"])
    report["tensorflow"] = section
    device = "/device:GPU:0" if wanted.get("device") == "cuda" else "/device:CPU:0"
    float_x = str(wanted.get("float_x") or "float32")
    repeats = max(1, int(request.get("repeats", 3)))
    report["kernels"] = [_kernel(tf, np, k, float_x, device, repeats)
                         for k in request.get("kernels", [])]
    report["elapsed_s"] = time.perf_counter() - started
    return report


def _finite(value):
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
    os.dup2(2, 1)  # whatever TensorFlow prints lands on stderr
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

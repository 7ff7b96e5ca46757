"""envforge's TensorFlow probe: what TensorFlow 1.x really does inside an environment.

Run with the TARGET environment's Python (3.5 to 3.7 for TensorFlow 1.15), the standard
library and envforge's ``proberuntime`` only until TensorFlow is imported, so it can describe
a half-broken environment::

    python probe.py < request.json > report.json

It reports versions, the devices TensorFlow lists, the variables it was started with, the
GPU libraries its loader asks for (opened with ctypes, as its dso_loader would), and runs
the core's kernels (``elementwise``, ``gemm``, ``conv``) in a graph session. It judges
nothing: envforge compares the report with the lock (``envforge.verify`` and the pack's
``verify.py``). The inputs are drawn as ``envforge/expectations/`` draws them, from
``numpy.random.RandomState(seed)`` in the same order; Theano's conv is a true convolution
(its filters flipped), so the filters are flipped here before TensorFlow's cross-correlation.
"""

import ctypes
import os
import sys

import proberuntime
from proberuntime import error_text

MODULES = ("numpy", "tensorflow")
KERNELS = ("elementwise", "gemm", "conv")


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
        return [], error_text(exc)


def _v1(tf):
    """TensorFlow 1.x's graph API: ``tf.compat.v1`` from 1.13 on, the top level before it
    (allenai/bilm-tf's TensorFlow 1.2.1 has no ``tf.compat.v1``)."""
    return getattr(getattr(tf, "compat", None), "v1", tf)


def _graph(tf, kernel, values, device):
    """The kernel as a TensorFlow graph on ``device``: (placeholders, output)."""
    name = kernel["name"]
    with tf.device(device):
        holders = [_v1(tf).placeholder(v.dtype, v.shape) for v in values]
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


def _kernel(tf, np, kernel, float_x, device, repeats):
    entry = proberuntime.kernel_entry(kernel, "ops", "gpu_ops", "uses_gpu")
    if tf is None or np is None:
        entry["error"] = "tensorflow or numpy could not be imported"
        return entry

    def run():
        values = proberuntime.core_inputs(np, kernel, float_x, "TensorFlow", KERNELS)
        graph = tf.Graph()
        with graph.as_default():
            holders, output = _graph(tf, kernel, values, device)
            config = _v1(tf).ConfigProto(log_device_placement=False)
            with _v1(tf).Session(graph=graph, config=config) as session:
                feed = dict(zip(holders, values))
                entry["run_s"], result = proberuntime.best_of(
                    lambda: session.run(output, feed_dict=feed), repeats)
        entry["ops"] = sorted(set(op.type for op in graph.get_operations()))
        entry["gpu_ops"] = sorted(set(op.type for op in graph.get_operations()
                                      if "GPU" in (op.device or "").upper()))
        entry["uses_gpu"] = bool(entry["gpu_ops"])
        return result
    return proberuntime.measured(entry, np, kernel, run)


def probe(request):
    report = proberuntime.new_report()
    modules = dict((name, proberuntime.import_module(name, report)) for name in MODULES)
    tf, np = modules["tensorflow"], modules["numpy"]
    report["distributions"] = proberuntime.distribution_versions(
        list(request.get("distributions", [])))
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
    report["kernels"] = proberuntime.run_kernels(
        request, lambda kernel, repeats: _kernel(tf, np, kernel, float_x, device, repeats))
    return report


if __name__ == "__main__":
    sys.exit(proberuntime.main(probe))

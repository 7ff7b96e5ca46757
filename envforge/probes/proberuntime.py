"""envforge's probe runtime: what every pack's probe shares.

Run by the TARGET environment's Python (3.5 to 3.12: no f-strings, no variable annotations,
no walrus), standard library only, so a probe can describe a half-broken environment. Verify
runs ``python proberuntime.py probe.py < request.json > report.json``
(``envforge.probes.probe_command``): this file starts the probe as ``python probe.py`` would,
with the probe's folder and this one on sys.path, even in a Python that puts neither there
(``-I``, the embeddable one's ``._pth``); the probe imports it as ``proberuntime`` and ends
with ``sys.exit(proberuntime.main(probe))``.

Shared here: the report's head, importing a module into it, the installed distributions,
the core kernels' inputs (drawn as ``envforge/expectations/`` draws them, from
``numpy.random.RandomState(seed)`` in the same order), timing, an output's summary, and
``main``: the request read, the report written as JSON the framework's own prints cannot
corrupt. Every failure is caught into the report as a string.
"""

import json
import math
import os
import platform
import re
import runpy
import sys
import time
import traceback

REPORT_FORMAT = 1
CORE_KERNELS = ("elementwise", "gemm", "conv", "grad", "train")


def error_text(exc):
    """One line for an exception: its type and message (pygpu's messages are bytes)."""
    args = getattr(exc, "args", ())
    if len(args) == 1 and isinstance(args[0], bytes):
        message = args[0].decode("utf-8", "replace")
    else:
        message = str(exc)
    return ("%s: %s" % (type(exc).__name__, message)).strip()


def new_report():
    """The fields every probe's report starts with."""
    return {
        "format": REPORT_FORMAT,
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "implementation": platform.python_implementation(),
                   "platform": platform.platform(), "cpu_count": os.cpu_count()},
        "versions": {}, "import_errors": {}, "distributions": {},
    }


def import_module(name, report, public_version=False):
    """The module, its version in ``report["versions"]``; None and the error in
    ``report["import_errors"]`` when importing it raised anything (an ImportError, or the
    TypeError protobuf 4 raises in old _pb2 files). ``public_version`` drops a local
    ``+cpu`` tag."""
    try:
        module = __import__(name)
    except Exception as exc:
        report["versions"][name] = None
        report["import_errors"][name] = error_text(exc)
        return None
    version = str(getattr(module, "__version__", "unknown"))
    report["versions"][name] = version.split("+")[0] if public_version else version
    return module


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_versions(names):
    """Installed distributions by name; Python 3.7 has no importlib.metadata.

    The fallback reads ``name-version.dist-info`` / ``.egg-info`` folder names on sys.path
    rather than importing pkg_resources, which a uv venv does not have.
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
    wanted = dict((canonical(name), name) for name in names)
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
            key = wanted.get(canonical(name))
            if key is not None and out[key] is None and version:
                out[key] = version.split("-py")[0]
    return out


class Draws(object):
    """A kernel's random inputs: ``numpy.random.RandomState(seed)`` drawn in the order
    envforge/expectations/ draws them."""

    def __init__(self, np, kernel, float_x):
        self.rng = np.random.RandomState(kernel["seed"])
        self.shape = [int(n) for n in kernel["shape"]]
        self.float_x = float_x

    def draw(self, *dims):
        return self.rng.rand(*dims).astype(self.float_x)

    def signed(self, *dims, **scale):
        factor = scale.get("scale", 1.0)
        return ((self.rng.rand(*dims) * 2.0 - 1.0) * factor).astype(self.float_x)


def core_inputs(np, kernel, float_x, framework, kernels=CORE_KERNELS):
    """The inputs of one of the core's kernels; ValueError for one ``kernels`` leaves out
    (``framework`` names the probe that does not run it)."""
    name = kernel["name"]
    if name not in kernels:
        raise ValueError("unknown kernel %r: the %s probe runs %s"
                         % (name, framework, ", ".join(kernels)))
    draws = Draws(np, kernel, float_x)
    shape = draws.shape
    if name == "elementwise":
        return [draws.draw(*shape)]
    if name == "gemm":
        return [draws.draw(*shape), draws.draw(*shape)]
    if name == "grad":
        batch, n_in, hidden, n_out = shape
        return [draws.draw(batch, n_in), draws.draw(batch, n_out),
                draws.signed(n_in, hidden, scale=1.0 / math.sqrt(n_in)),
                draws.signed(hidden, scale=0.1),
                draws.signed(hidden, n_out, scale=1.0 / math.sqrt(hidden)),
                draws.signed(n_out, scale=0.1)]
    if name == "train":
        examples, features, _ = shape
        return [draws.signed(examples, features),
                draws.rng.randint(0, 2, size=examples).astype(float_x)]
    if name != "conv":
        raise ValueError("%r is not one of the core's kernels" % name)
    channels = [int(c) for c in kernel["channels"]]
    k = int(kernel.get("filter_size", 3))
    values = [draws.draw(*shape)]
    for c_in, c_out in zip(channels, channels[1:]):
        # He-uniform: keeps activations the same size through ReLU layers.
        w = (draws.rng.rand(c_out, c_in, k, k) * 2.0 - 1.0) * math.sqrt(6.0 / (c_in * k * k))
        values.append(w.astype(float_x))
    return values


def best_of(call, repeats):
    """(the fastest of ``repeats`` calls in seconds, the last call's result)."""
    best, result = None, None
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        took = time.perf_counter() - started
        best = took if best is None else min(best, took)
    return best, result


def kernel_entry(kernel, *fields):
    """A kernel's report entry: what it ran, every measurement None until made."""
    entry = dict((name, None) for name in ("output_shape", "checksum", "samples",
                                           "nonfinite", "run_s", "error") + fields)
    entry.update(name=kernel.get("name"), seed=kernel.get("seed"), shape=kernel.get("shape"))
    return entry


def summary(np, result, indices):
    """An output's shape, dtype, non-finite count, checksum and samples at ``indices``."""
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


def add_summary(entry, np, result, kernel):
    """``summary`` of a kernel's output into its entry; an error only where it has none."""
    found = summary(np, result, [int(i) for i in kernel.get("sample_indices", [])])
    error = found.pop("error")
    entry.update(found)
    if error and not entry.get("error"):
        entry["error"] = error
    return entry


def measured(entry, np, kernel, run):
    """The kernel's entry once ``run()`` (which may fill in timings) returned its output:
    the output summarised into it, or whatever ``run`` raised as its error."""
    try:
        output = run()
    except Exception as exc:
        entry["error"] = error_text(exc)
        return entry
    return add_summary(entry, np, output, kernel)


def run_kernels(request, run):
    """``run(kernel, repeats)`` of each kernel the request names, in its order: ``repeats``
    timed runs each, as the request asks (at least one)."""
    repeats = max(1, int(request.get("repeats", 3)))
    return [run(kernel, repeats) for kernel in request.get("kernels", [])]


def finite(value):
    """JSON has no NaN or Infinity: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return dict((k, finite(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def main(probe):
    """Run ``probe(request)`` on the JSON request read from stdin and write its report, with
    the seconds it took, to stdout; 2 when the probe itself failed (the report then holds
    its error). Frameworks print to stdout in places (Theano, a compiler, "Using TensorFlow
    backend."), so fd 1 points at stderr while the probe works and the report goes to a copy
    of the original."""
    sys.stdout.flush()
    report_stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    status = 0
    try:
        request = json.load(sys.stdin)
        if not isinstance(request, dict):
            raise ValueError("the request must be a JSON object")
        started = time.perf_counter()
        report = probe(request)
        report["elapsed_s"] = time.perf_counter() - started
    except Exception as exc:
        report = {"format": REPORT_FORMAT, "error": error_text(exc),
                  "traceback": traceback.format_exc()[-4000:]}
        status = 2
    json.dump(finite(report), report_stream, sort_keys=True, indent=1, allow_nan=False)
    report_stream.write("\n")
    report_stream.flush()
    return status


def run_file(path):
    """Run the probe file ``path`` as the program's ``__main__`` (a spawned worker re-imports
    it as it would the script), with its folder and this module's first on sys.path and
    this module importable as ``proberuntime``."""
    path = os.path.abspath(path)
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (os.path.dirname(path), here):
        while folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    sys.modules["proberuntime"] = sys.modules[__name__]
    sys.argv = [path] + sys.argv[2:]
    runpy.run_path(path, run_name="__main__")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python proberuntime.py PROBE.py < request.json > report.json")
    run_file(sys.argv[1])

"""Does theano.scan run its compiled C loop (scan_perform) here? Exit 0 only if it does.

Run inside the environment (``envforge run SPEC -- python docs/gpu/scan_check.py``), the
device in THEANO_FLAGS; with ``device=cuda*`` the Scan must also be moved to the GPU (its
``gpua`` flag, Gpu* ops in the graph). Theano-PyMC 1.0.5's Scan.make_thunk binds the loop
it will run as the default argument ``p`` of its thunk: the function ``p`` calling
``scan_perform_ext.perform`` (the C loop), or the bound method ``Scan.execute`` (the Python
fallback, taken when scan_perform_ext cannot be imported). Prints one JSON line.
Python 3.6+, no envforge import.
"""

import json
import sys
import time


def _compiled_file(ext):
    """Where the compiled scan_perform module was loaded from, if it was."""
    if ext is None:
        return None
    return getattr(sys.modules.get(ext.perform.__module__), "__file__", None)


def main():
    started = time.time()
    import numpy as np
    import theano
    import theano.tensor as tt

    floatx = theano.config.floatX
    x = tt.vector("x")
    steps, _ = theano.scan(lambda v, acc: acc + v * v, sequences=x,
                           outputs_info=tt.zeros_like(x[0]))
    f = theano.function([x], steps[-1])
    data = np.arange(1000, dtype=floatx) / np.asarray(100, dtype=floatx)
    value = float(f(data))
    expected = float(np.sum(data.astype("float64") ** 2))
    loops, on_gpu = [], []
    for index, node in enumerate(f.fn.nodes):  # the VM keeps one thunk per node, in order
        if type(node.op).__name__ != "Scan":
            continue
        thunk = f.fn.thunks[index]
        on_gpu.append(bool(getattr(node.op, "gpua", False)))
        loop = (getattr(thunk, "__defaults__", None) or (None,))[0]
        bound_to = getattr(loop, "__self__", None)
        loops.append("python" if bound_to is node.op else
                     "c" if getattr(loop, "__name__", "") == "p" else "unknown")
    graph = sorted({type(n.op).__name__ for n in f.maker.fgraph.toposort()})
    ext = sys.modules.get("theano.scan_module.scan_perform_ext")
    report = {
        "python": sys.version.split()[0], "numpy": np.__version__,
        "theano": theano.__version__, "device": theano.config.device, "floatX": floatx,
        "graph": graph, "scan_loops": loops, "scan_on_gpu": on_gpu,
        "scan_perform": _compiled_file(ext),
        "scan_perform_version": ext.get_version() if ext is not None else None,
        "value": value, "expected": expected,
        "close": abs(value - expected) <= 1e-3 * abs(expected),
        "seconds": round(time.time() - started, 1),
    }
    report["c_scan"] = loops == ["c"] and report["close"]
    wants_gpu = str(theano.config.device).startswith("cuda")
    report["gpu_ok"] = not wants_gpu or (on_gpu == [True] and any(
        name.startswith("Gpu") for name in graph))
    print(json.dumps(report, sort_keys=True))
    return 0 if report["c_scan"] and report["gpu_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""The Theano probe's kernels: each compiled from its graph, run and timed, its ops listed
(which ran on the GPU, which Scan implementation); run by the environment's Python (3.5
grammar). The inputs are drawn as ``envforge/expectations/`` draws them."""

import math
import sys
import time
import traceback

import proberuntime
from probe_gemm import GEMM_ITERATIONS, MAX_ERROR, gemm_timing, is_gpu_op
from proberuntime import error_text

KERNELS = ("elementwise", "gemm", "conv", "grad", "train", "scan", "softmax_xent", "random")


def _inputs(np, kernel, float_x):
    """The kernel's inputs: the same draws, in the same order, as envforge/expectations/;
    the core's kernels as every probe draws them, Theano's own here."""
    name = kernel["name"]
    if name == "random":
        return []
    if name not in ("scan", "softmax_xent"):
        return proberuntime.core_inputs(np, kernel, float_x, "Theano", KERNELS)
    draws = proberuntime.Draws(np, kernel, float_x)
    if name == "scan":
        steps, units = draws.shape
        return [draws.draw(steps, units),
                draws.signed(units, units, scale=1.0 / math.sqrt(units)), draws.draw(units)]
    batch, features, classes = draws.shape
    return [draws.draw(batch, features), draws.signed(features, classes),
            draws.signed(classes, scale=0.1),
            draws.rng.randint(0, classes, size=batch).astype("int64")]


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
        shared = [update[0] for update in streams.state_updates]
        return _resetting(np, fn, shared, lambda: fn()), [fn]
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
        gpu = [type(node.op).__name__ for node in nodes if is_gpu_op(node.op)]
        if kernel["name"] == "scan":
            out["scan"] = _scan_section(functions[0])
            gpu += [op for op in out["scan"]["inner_ops"] if op.startswith("Gpu")]
        out["gpu_ops"] = gpu
        out["uses_gpu"] = bool(gpu)
        out["run_s"] = proberuntime.best_of(lambda: np.asarray(call()), repeats)[0]
    except Exception as exc:
        out["error"] = error_text(exc)[:MAX_ERROR]
        out["traceback"] = traceback.format_exc()[-MAX_ERROR:]
    return out, result


def run_kernel(theano, np, kernel, repeats, cpu_compare, gpu_active=False):
    """A kernel's entry: its output summarised, its ops, compile and run times; on a GPU,
    GEMM against raw cuBLAS and, with ``cpu_compare``, the speed-up over the CPU graph."""
    entry = proberuntime.kernel_entry(kernel, "dtype", "ops", "gpu_ops", "uses_gpu",
                                      "compile_s", "cpu", "speedup")
    if theano is None or np is None:
        entry["error"] = "theano or numpy could not be imported"
        return entry
    try:
        float_x = str(theano.config.floatX)
        values = _inputs(np, kernel, float_x)
    except Exception as exc:
        entry["error"] = "building inputs: " + error_text(exc)
        return entry
    mode = theano.compile.mode.get_default_mode()
    run, result = _run(theano, np, kernel, values, mode, repeats)
    entry.update(run)
    if result is not None:
        proberuntime.add_summary(entry, np, result, kernel)
    if gpu_active and kernel.get("name") == "gemm" and entry["run_s"]:
        entry["gemm_timing"] = gemm_timing(theano, np, values, GEMM_ITERATIONS, entry["run_s"])
    if cpu_compare:
        # The same graph with the GPU optimisations left out: Theano's own way to compare.
        cpu, _ = _run(theano, np, kernel, values, mode.excluding("gpuarray"), repeats)
        entry["cpu"] = cpu
        if cpu["run_s"] and entry["run_s"]:
            entry["speedup"] = cpu["run_s"] / entry["run_s"]
    return entry

"""envforge's Keras probe: what Keras 2.x really does on its back-end inside an environment.

Run with the TARGET environment's Python (3.5 to 3.7 for Keras 2.0-2.3), standard library
only until Keras is imported, in the Python both know::

    python probe.py < request.json > report.json

It reports Keras's version, the back-end and keras.json values Keras loaded (and the file
it read them from), and trains the request's model: ``Dense(1, sigmoid)`` from zero weights,
binary cross-entropy, full-batch SGD, one batch per epoch, so each epoch's loss is the loss
before its update. The output (the losses, then the final weights and bias) is what
``envforge/expectations.py``'s ``train`` reference computes with NumPy from the same draws of
``numpy.random.RandomState(seed)``. It judges nothing.
"""

import inspect
import json
import math
import os
import platform
import sys
import time
import traceback

REPORT_FORMAT = 1


def _error_text(exc):
    return ("%s: %s" % (type(exc).__name__, exc)).strip()


def _config(keras):
    """What Keras loaded: its back-end, keras.json's values and the file it looked at."""
    from keras import backend

    section = {"backend": backend.backend(), "floatx": backend.floatx(),
               "epsilon": backend.epsilon(), "image_data_format": backend.image_data_format(),
               "keras_backend_variable": os.environ.get("KERAS_BACKEND"),
               "keras_home": os.environ.get("KERAS_HOME")}
    # Keras 2.3 reads keras.json in keras/backend/load_backend.py, 2.0-2.2 in keras/backend
    path = None
    for name in ("keras.backend.load_backend", "keras.backend"):
        path = path or getattr(sys.modules.get(name), "_config_path", None)
    section["config_path"] = os.path.abspath(path) if path else None
    section["config_read"] = None
    if path and os.path.isfile(path):
        try:
            with open(path) as handle:
                section["config_read"] = json.load(handle)
        except ValueError as exc:
            section["config_read"] = _error_text(exc)
    return section


def _sgd(sgd, rate):
    """Keras 2.3 names the rate ``learning_rate`` (``lr`` still read); 2.0-2.2 know only
    ``lr`` and refuse any other keyword."""
    try:
        names = inspect.signature(sgd.__init__).parameters
    except (TypeError, ValueError):
        names = {}
    return sgd(learning_rate=rate) if "learning_rate" in names else sgd(lr=rate)


def _train(keras, np, kernel, floatx):
    entry = {"name": "train", "seed": kernel.get("seed"), "shape": kernel.get("shape"),
             "output_shape": None, "checksum": None, "samples": None, "nonfinite": None,
             "run_s": None, "error": None}
    try:
        examples, features, steps = [int(n) for n in kernel["shape"]]
        rate = float((kernel.get("params") or {}).get("learning_rate", 0.5))
        rng = np.random.RandomState(kernel["seed"])
        x = ((rng.rand(examples, features) * 2.0 - 1.0) * 1.0).astype(floatx)
        y = rng.randint(0, 2, size=examples).astype(floatx)
        from keras.layers import Dense
        from keras.models import Sequential
        from keras.optimizers import SGD

        model = Sequential([Dense(1, activation="sigmoid", input_dim=features,
                                  kernel_initializer="zeros", bias_initializer="zeros")])
        model.compile(optimizer=_sgd(SGD, rate), loss="binary_crossentropy")
        started = time.perf_counter()
        history = model.fit(x, y, batch_size=examples, epochs=steps, shuffle=False, verbose=0)
        entry["run_s"] = time.perf_counter() - started
        weights, bias = model.get_weights()
        output = np.concatenate([np.asarray(history.history["loss"], dtype=np.float64),
                                 weights.astype(np.float64).ravel(),
                                 bias.astype(np.float64).ravel()])
    except Exception as exc:
        entry["error"] = _error_text(exc)
        return entry
    flat = output.ravel()
    entry["output_shape"] = list(output.shape)
    entry["nonfinite"] = int(flat.size - int(np.isfinite(flat).sum()))
    if not entry["nonfinite"]:
        entry["checksum"] = float(flat.sum())
    indices = [int(i) for i in kernel.get("sample_indices", [])]
    if any(not -flat.size <= i < flat.size for i in indices):
        entry["error"] = "sample indices outside an output of %d values" % flat.size
        return entry
    entry["samples"] = [float(flat[i]) if math.isfinite(flat[i]) else None for i in indices]
    return entry


def probe(request):
    started = time.perf_counter()
    report = {"format": REPORT_FORMAT,
              "python": {"version": platform.python_version(), "executable": sys.executable},
              "versions": {}, "import_errors": {}, "distributions": {}, "kernels": []}
    wanted = request.get("keras") or {}
    keras = np = None
    for name in ("numpy", "keras"):
        try:
            module = __import__(name)
        except Exception as exc:
            report["versions"][name] = None
            report["import_errors"][name] = _error_text(exc)
            continue
        report["versions"][name] = str(getattr(module, "__version__", "unknown"))
        if name == "numpy":
            np = module
        else:
            keras = module
    section = {"config": None, "train": None}
    if keras is not None:
        try:
            section["config"] = _config(keras)
        except Exception as exc:
            section["config"] = {"error": _error_text(exc)}
        if np is not None and wanted.get("train"):
            from keras import backend

            section["train"] = _train(keras, np, wanted["train"], backend.floatx())
    report["keras"] = section
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
    os.dup2(2, 1)  # "Using TensorFlow backend." and the back-end's own output go to stderr
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

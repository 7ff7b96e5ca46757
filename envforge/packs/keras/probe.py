"""envforge's Keras probe: what Keras 2.x really does on its back-end inside an environment.

Run with the TARGET environment's Python (3.5 to 3.7 for Keras 2.0-2.3), the standard
library and envforge's ``proberuntime`` only until Keras is imported::

    python probe.py < request.json > report.json

It reports Keras's version, the back-end and keras.json values Keras loaded (and the file
it read them from), and trains the request's model: ``Dense(1, sigmoid)`` from zero weights,
binary cross-entropy, full-batch SGD, one batch per epoch, so each epoch's loss is the loss
before its update. The output (the losses, then the final weights and bias) is what
``envforge/expectations/core.py``'s ``train`` reference computes with NumPy from the same draws of
``numpy.random.RandomState(seed)``. It judges nothing.
"""

import inspect
import json
import os
import sys
import time

import proberuntime
from proberuntime import error_text


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
            section["config_read"] = error_text(exc)
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
    kernel = dict(kernel, name="train")
    entry = proberuntime.kernel_entry(kernel)

    def run():
        examples, features, steps = [int(n) for n in kernel["shape"]]
        rate = float((kernel.get("params") or {}).get("learning_rate", 0.5))
        x, y = proberuntime.core_inputs(np, kernel, floatx, "Keras", ("train",))
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
        return np.concatenate([np.asarray(history.history["loss"], dtype=np.float64),
                               weights.astype(np.float64).ravel(),
                               bias.astype(np.float64).ravel()])
    return proberuntime.measured(entry, np, kernel, run)


def probe(request):
    report = proberuntime.new_report()
    report["kernels"] = []
    wanted = request.get("keras") or {}
    np = proberuntime.import_module("numpy", report)
    keras = proberuntime.import_module("keras", report)
    section = {"config": None, "train": None}
    if keras is not None:
        try:
            section["config"] = _config(keras)
        except Exception as exc:
            section["config"] = {"error": error_text(exc)}
        if np is not None and wanted.get("train"):
            from keras import backend

            section["train"] = _train(keras, np, wanted["train"], backend.floatx())
    report["keras"] = section
    return report


if __name__ == "__main__":
    sys.exit(proberuntime.main(probe))

"""Keras on Theano's GPU back-end with h5py, in an applied environment: trains a small conv
net, saves it to HDF5 (model.save), loads it back (load_model) and compares the predictions.

verify's Keras rows train a model against the lock's references but never touch an .h5 file;
this is the round trip that h5py 3 breaks under Keras < 2.4 (keras.toml). One JSON line on
stdout; exit 0 only when the training graph holds GPU ops (with device=cuda), the loss fell
and the loaded model predicts what the saved one did, bit for bit.
Usage: envforge run SPEC -- python keras_h5_check.py
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import h5py
import keras
import numpy as np
import theano
from keras import backend
from keras.layers import Conv2D, Dense, Flatten, MaxPooling2D
from keras.models import Sequential, load_model


def train_ops(model):
    """Op names of the compiled Theano training function (Keras's K.function wraps it)."""
    model._make_train_function()
    fn = model.train_function.function
    return sorted({type(node.op).__name__ for node in fn.maker.fgraph.toposort()})


def main():
    rng = np.random.RandomState(22)
    x = rng.rand(2048, 28, 28, 1).astype("float32")
    y = keras.utils.to_categorical(rng.randint(0, 10, 2048), 10)
    model = Sequential([
        Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)),
        MaxPooling2D((2, 2)),
        Flatten(),
        Dense(128, activation="relu"),
        Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="categorical_crossentropy")
    ops = train_ops(model)
    start = time.time()
    history = model.fit(x, y, batch_size=128, epochs=4, verbose=0, shuffle=False)
    seconds = time.time() - start
    losses = [float(v) for v in history.history["loss"]]
    before = model.predict(x[:256])
    path = str(Path(tempfile.mkdtemp()) / "model.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        saved_by = f.attrs.get("keras_version")
    loaded = load_model(path)
    after = loaded.predict(x[:256])
    gpu = theano.config.device.startswith("cuda")
    gpu_ops = [op for op in ops if op.startswith("Gpu")]
    report = {
        "python": sys.version.split()[0], "numpy": np.__version__,
        "theano": theano.__version__, "keras": keras.__version__, "backend": backend.backend(),
        "h5py": h5py.__version__, "hdf5": h5py.version.hdf5_version,
        "device": theano.config.device, "floatX": theano.config.floatX,
        "saved_by": saved_by.decode() if isinstance(saved_by, bytes) else saved_by,
        "gpu_ops": gpu_ops, "ops": len(ops), "losses": losses, "train_s": round(seconds, 3),
        "roundtrip_equal": bool(np.array_equal(before, after)),
        "h5_bytes": Path(path).stat().st_size,
    }
    ok = (report["roundtrip_equal"] and losses[-1] < losses[0] and backend.backend() == "theano"
          and (bool(gpu_ops) or not gpu))
    report["ok"] = ok
    print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

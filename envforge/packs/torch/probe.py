"""envforge's PyTorch probe: what PyTorch 1.x really does inside an environment.

Run with the TARGET environment's Python (3.5 to 3.12: no f-strings), standard library
only until torch is imported, so it can describe a half-broken environment::

    python probe.py < request.json > report.json

It reports versions, the CUDA runtime the build carries and the threads it runs with, and
runs the core's kernels (``elementwise``, ``gemm``, ``conv``, ``grad``, ``train``) with
inputs drawn as ``envforge/expectations.py`` draws them, from
``numpy.random.RandomState(seed)`` in the same order. Theano's conv is a true convolution,
so the filters are flipped before torch's cross-correlation. Its own checks: autograd's
gradients and a training loop (SGD, full batch) for the lock's NumPy references, a
DataLoader with workers against one without, ``torch.jit.trace`` against eager mode, and a
torchvision model built and run. It judges nothing: envforge compares the report with the
lock (``envforge.verify`` and the pack's ``verify.py``).
"""

import json
import math
import os
import platform
import re
import sys
import time
import traceback

REPORT_FORMAT = 1
KERNELS = ("elementwise", "gemm", "conv", "grad", "train")


def _error_text(exc):
    return ("%s: %s" % (type(exc).__name__, exc)).strip()


def _import(name, report):
    try:
        module = __import__(name)
    except Exception as exc:
        report["versions"][name] = None
        report["import_errors"][name] = _error_text(exc)
        return None
    report["versions"][name] = str(getattr(module, "__version__", "unknown")).split("+")[0]
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


def _inputs(np, kernel, float_x):
    """The kernel's inputs, drawn in envforge.expectations.kernel_inputs's order."""
    rng = np.random.RandomState(kernel["seed"])
    shape = [int(n) for n in kernel["shape"]]
    name = kernel["name"]

    def draw(*dims):
        return rng.rand(*dims).astype(float_x)

    def signed(*dims, **scale):
        return ((rng.rand(*dims) * 2.0 - 1.0) * scale.get("scale", 1.0)).astype(float_x)

    if name == "elementwise":
        return [draw(*shape)]
    if name == "gemm":
        return [draw(*shape), draw(*shape)]
    if name == "grad":
        batch, n_in, hidden, n_out = shape
        return [draw(batch, n_in), draw(batch, n_out),
                signed(n_in, hidden, scale=1.0 / math.sqrt(n_in)), signed(hidden, scale=0.1),
                signed(hidden, n_out, scale=1.0 / math.sqrt(hidden)), signed(n_out, scale=0.1)]
    if name == "train":
        examples, features, _ = shape
        return [signed(examples, features),
                rng.randint(0, 2, size=examples).astype(float_x)]
    if name == "conv":
        channels = [int(c) for c in kernel["channels"]]
        k = int(kernel.get("filter_size", 3))
        values = [draw(*shape)]
        for c_in, c_out in zip(channels, channels[1:]):
            w = (rng.rand(c_out, c_in, k, k) * 2.0 - 1.0) * math.sqrt(6.0 / (c_in * k * k))
            values.append(w.astype(float_x))
        return values
    raise ValueError("the PyTorch probe runs %s, not %r" % (", ".join(KERNELS), name))


def _grad(torch, tensors):
    """The MLP's half squared error per example, differentiated by autograd: the gradients
    of W1, b1, W2, b2 flattened in that order."""
    x, target = tensors[0], tensors[1]
    params = [t.clone().requires_grad_(True) for t in tensors[2:]]
    w1, b1, w2, b2 = params
    y = torch.tanh(x.mm(w1) + b1).mm(w2) + b2
    loss = 0.5 * ((y - target) ** 2).sum() / x.shape[0]
    grads = torch.autograd.grad(loss, params)
    return torch.cat([g.reshape(-1) for g in grads])


def _train(torch, tensors, kernel):
    """Logistic regression from zero weights, full-batch SGD: each step's loss (before its
    update), then the final weights and bias."""
    x, y = tensors
    steps = int(kernel["shape"][2])
    rate = float((kernel.get("params") or {}).get("learning_rate", 0.5))
    model = torch.nn.Linear(x.shape[1], 1).to(device=x.device, dtype=x.dtype)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    optimizer = torch.optim.SGD(model.parameters(), lr=rate)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x).reshape(-1), y)
        losses.append(loss.detach().reshape(1))
        loss.backward()
        optimizer.step()
    return torch.cat(losses + [model.weight.detach().reshape(-1),
                               model.bias.detach().reshape(-1)])


def _compute(torch, kernel, tensors):
    name = kernel["name"]
    if name == "elementwise":
        return torch.exp(tensors[0])
    if name == "gemm":
        return tensors[0].mm(tensors[1])
    if name == "grad":
        return _grad(torch, tensors)
    if name == "train":
        return _train(torch, tensors, kernel)
    pad = {"half": None, "valid": 0}[kernel.get("border_mode", "half")]
    h = tensors[0]
    for w in tensors[1:]:
        if kernel.get("filter_flip", True):
            w = w.flip(2, 3)
        padding = w.shape[2] // 2 if pad is None else pad
        h = torch.nn.functional.relu(torch.nn.functional.conv2d(h, w, padding=padding))
    return h


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


def _kernel(torch, np, kernel, float_x, device, repeats):
    entry = {"name": kernel.get("name"), "seed": kernel.get("seed"), "shape": kernel.get("shape"),
             "output_shape": None, "checksum": None, "samples": None, "nonfinite": None,
             "uses_gpu": None, "run_s": None, "error": None}
    if torch is None or np is None:
        entry["error"] = "torch or numpy could not be imported"
        return entry
    try:
        tensors = [torch.from_numpy(v).to(device) for v in _inputs(np, kernel, float_x)]
        best, result = None, None
        for _ in range(repeats):
            started = time.perf_counter()
            result = _compute(torch, kernel, tensors)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            took = time.perf_counter() - started
            best = took if best is None else min(best, took)
        entry["run_s"] = best
        entry["uses_gpu"] = result.is_cuda
        result = result.detach().cpu().numpy()
    except Exception as exc:
        entry["error"] = _error_text(exc)
        return entry
    summary = _summary(np, result, [int(i) for i in kernel.get("sample_indices", [])])
    error = summary.pop("error")
    entry.update(summary)
    entry["error"] = error
    return entry


class _Squares(object):
    """A map-style dataset whose items are computed in the worker that loads them (it holds
    no module, so a spawned worker can unpickle it)."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        import torch

        value = float(index)
        return torch.tensor([value, value * value])


def _dataloader(torch, seed, workers):
    """The batches of a shuffled DataLoader with ``workers`` processes equal those of 0."""
    out = {"workers": workers, "batches": None, "equal": None, "error": None}
    try:
        from torch.utils.data import DataLoader

        runs = []
        for count in (0, workers):
            torch.manual_seed(seed)
            loader = DataLoader(_Squares(37), batch_size=5, shuffle=True,
                                num_workers=count)
            runs.append([batch.tolist() for batch in loader])
        out["batches"] = len(runs[0])
        out["equal"] = runs[0] == runs[1]
    except Exception as exc:
        out["error"] = _error_text(exc)
    return out


def _jit(torch, device, float_x):
    """torch.jit.trace of a small MLP against the eager module on the same input."""
    out = {"available": hasattr(torch, "jit") and hasattr(torch.jit, "trace"),
           "max_abs_diff": None, "error": None}
    if not out["available"]:
        return out
    try:
        dtype = getattr(torch, float_x)
        model = torch.nn.Sequential(torch.nn.Linear(6, 10), torch.nn.Tanh(),
                                    torch.nn.Linear(10, 3)).to(device=device, dtype=dtype)
        example = torch.rand(4, 6, dtype=dtype).to(device)
        traced = torch.jit.trace(model, (example,))
        other = torch.rand(4, 6, dtype=dtype).to(device)
        with torch.no_grad():
            out["max_abs_diff"] = float((traced(other) - model(other)).abs().max())
    except Exception as exc:
        out["error"] = _error_text(exc)
    return out


def _vision(torch, np, device):
    """torchvision's resnet18, random weights, run on one random image."""
    out = {"model": "resnet18", "output_shape": None, "finite": None, "error": None}
    try:
        import torchvision

        model = torchvision.models.resnet18(pretrained=False).to(device).eval()
        with torch.no_grad():
            result = model(torch.rand(1, 3, 64, 64).to(device))
        out["output_shape"] = list(result.shape)
        out["finite"] = bool(np.isfinite(result.cpu().numpy()).all())
    except Exception as exc:
        out["error"] = _error_text(exc)
    return out


def _vision_ops(torch):
    """torchvision.ops.nms, run by torchvision's compiled extension (0.3 on): of three boxes
    the second overlaps the first by IoU 0.81, so [0, 2] are kept."""
    out = {"keep": None, "error": None}
    try:
        from torchvision.ops import nms

        boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 10.0, 10.0],
                              [20.0, 20.0, 30.0, 30.0]])
        out["keep"] = [int(i) for i in nms(boxes, torch.tensor([0.9, 0.8, 0.7]), 0.5)]
    except Exception as exc:
        out["error"] = _error_text(exc)
    return out


def probe(request):
    started = time.perf_counter()
    report = {
        "format": REPORT_FORMAT,
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "implementation": platform.python_implementation(),
                   "platform": platform.platform(), "cpu_count": os.cpu_count()},
        "versions": {}, "import_errors": {}, "distributions": {},
    }
    wanted = request.get("torch") or {}
    np = _import("numpy", report)
    torch = _import("torch", report)
    report["distributions"] = _distribution_versions(list(request.get("distributions", [])))
    device = "cuda:0" if wanted.get("device") == "cuda" else "cpu"
    float_x = str(wanted.get("float_x") or "float32")
    section = {"cuda_build": None, "cuda_available": None, "threads": None, "grad": None,
               "train": None, "dataloader": None, "jit": None, "vision": None,
               "vision_ops": None}
    if torch is not None:
        section["cuda_build"] = getattr(torch.version, "cuda", None)
        section["cuda_available"] = bool(torch.cuda.is_available())
        torch.set_num_threads(int(wanted.get("threads", 1)))
        section["threads"] = torch.get_num_threads()
        seed = int(wanted.get("seed", 0))
        for name in ("grad", "train"):
            if wanted.get(name):
                section[name] = _kernel(torch, np, wanted[name], float_x, device, 1)
        section["dataloader"] = _dataloader(torch, seed, int(wanted.get("dataloader_workers", 2)))
        if wanted.get("jit"):
            torch.manual_seed(seed)
            section["jit"] = _jit(torch, device, float_x)
        if wanted.get("torchvision"):
            _import("torchvision", report)
            torch.manual_seed(seed)
            section["vision"] = _vision(torch, np, device)
        if wanted.get("torchvision_ops"):
            section["vision_ops"] = _vision_ops(torch)
    report["torch"] = section
    repeats = max(1, int(request.get("repeats", 3)))
    report["kernels"] = [_kernel(torch, np, k, float_x, device, repeats)
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
    os.dup2(2, 1)  # whatever torch prints lands on stderr
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

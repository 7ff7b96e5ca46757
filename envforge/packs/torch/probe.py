"""envforge's PyTorch probe: what PyTorch 1.x really does inside an environment.

Run with the TARGET environment's Python (3.5 to 3.12: no f-strings), the standard library
and envforge's ``proberuntime`` only until torch is imported, so it can describe a
half-broken environment::

    python probe.py < request.json > report.json

It reports versions, the CUDA runtime the build carries and the threads it runs with, and
runs the core's kernels (``elementwise``, ``gemm``, ``conv``, ``grad``, ``train``) with
inputs drawn as ``envforge/expectations/`` draws them, from
``numpy.random.RandomState(seed)`` in the same order. Theano's conv is a true convolution,
so the filters are flipped before torch's cross-correlation. Its own checks: autograd's
gradients and a training loop (SGD, full batch) for the lock's NumPy references, a
DataLoader with workers against one without, ``torch.jit.trace`` against eager mode, and a
torchvision model built and run. It judges nothing: envforge compares the report with the
lock (``envforge.verify`` and the pack's ``verify.py``).
"""

import sys

import proberuntime
from proberuntime import error_text

KERNELS = ("elementwise", "gemm", "conv", "grad", "train")


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


def _kernel(torch, np, kernel, float_x, device, repeats):
    entry = proberuntime.kernel_entry(kernel, "uses_gpu")
    if torch is None or np is None:
        entry["error"] = "torch or numpy could not be imported"
        return entry

    def run():
        values = proberuntime.core_inputs(np, kernel, float_x, "PyTorch", KERNELS)
        tensors = [torch.from_numpy(v).to(device) for v in values]

        def compute():
            result = _compute(torch, kernel, tensors)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            return result
        entry["run_s"], result = proberuntime.best_of(compute, repeats)
        entry["uses_gpu"] = result.is_cuda
        return result.detach().cpu().numpy()
    return proberuntime.measured(entry, np, kernel, run)


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
        out["error"] = error_text(exc)
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
        out["error"] = error_text(exc)
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
        out["error"] = error_text(exc)
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
        out["error"] = error_text(exc)
    return out


def probe(request):
    report = proberuntime.new_report()
    wanted = request.get("torch") or {}
    np = proberuntime.import_module("numpy", report, public_version=True)
    torch = proberuntime.import_module("torch", report, public_version=True)
    report["distributions"] = proberuntime.distribution_versions(
        list(request.get("distributions", [])))
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
            proberuntime.import_module("torchvision", report, public_version=True)
            torch.manual_seed(seed)
            section["vision"] = _vision(torch, np, device)
        if wanted.get("torchvision_ops"):
            section["vision_ops"] = _vision_ops(torch)
    report["torch"] = section
    report["kernels"] = proberuntime.run_kernels(
        request, lambda kernel, repeats: _kernel(torch, np, kernel, float_x, device, repeats))
    return report


if __name__ == "__main__":
    sys.exit(proberuntime.main(probe))

"""What a lock holds for PyTorch: ``[platforms.X.expect.torch]``.

The probe's settings ([torch]), what the locked releases let it check (torchvision's model,
``torch.jit.trace``), the PyPI wheel's CUDA runtime and kernel architectures (doctor's GPU
rule reads them), and two references computed here with NumPy: the MLP's gradients by
central differences (what autograd must agree with) and a logistic regression trained by
full-batch SGD (its loss curve and final weights). The resolved versions are judged
against the pack's rules too: an unpinned torchvision that resolved to another torch's
release, or Pillow 7 under torchvision 0.2.2, is refused by ``envforge lock``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from envforge.errors import CompatibilityError
from envforge.lockfile import Expectations, KernelExpectation
from envforge.packs.torch.section import torch_section
from envforge.spec import Bool, Frozen, Int, PlatformSpec


class TorchExpect(Frozen):
    device: Literal["cpu", "cuda"]
    float_x: Literal["float32", "float64"]
    threads: Int = Field(ge=1, le=256)
    seed: Int = Field(ge=0, lt=1 << 63)
    dataloader_workers: Int = Field(ge=1, le=64)
    # torch.jit.trace exists from 1.0; torchvision's model is built where it is locked, its
    # compiled ops (torchvision.ops.nms) run from 0.3 on
    jit: Bool
    torchvision: Bool
    torchvision_ops: Bool
    grad: KernelExpectation
    train: KernelExpectation
    # the PyPI linux wheel's CUDA runtime and its kernels' architectures, where known
    wheel_cuda: str | None = None
    wheel_arches: tuple[str, ...] = ()
    wheel_ptx: tuple[str, ...] = ()


def torch_expect(expect: Expectations) -> TorchExpect | None:
    found = expect.packs.get("torch")
    return found if isinstance(found, TorchExpect) else None


def expectations(pspec: PlatformSpec, versions: Mapping[str, str]) -> TorchExpect:
    from packaging.version import Version

    from envforge.expectations import KERNEL_SHAPES, expect_kernel
    from envforge.packs.torch.knowledge import wheel

    refuse_resolved(pspec, versions)
    section = torch_section(pspec)
    verify = pspec.verify
    grad, train = (expect_kernel(name, seed=verify.seed, shape=KERNEL_SHAPES[name],
                                 float_x=section.float_x, rtol=verify.rtol, atol=verify.atol)
                   for name in ("grad", "train"))
    torch = versions.get("torch")
    row = wheel(torch, pspec.platform) if torch is not None else None
    return TorchExpect(
        device=section.device, float_x=section.float_x, threads=section.threads,
        seed=section.seed, dataloader_workers=section.dataloader_workers,
        jit=torch is not None and Version(torch) >= Version("1.0"),
        torchvision="torchvision" in versions,
        torchvision_ops=Version(versions.get("torchvision", "0")) >= Version("0.3"),
        grad=grad, train=train,
        wheel_cuda=row.cuda if row else None, wheel_arches=row.arches if row else (),
        wheel_ptx=row.ptx if row else ())


def refuse_resolved(pspec: PlatformSpec, versions: Mapping[str, str]) -> None:
    """CompatibilityError for the first rule the resolved versions break: a torchvision not
    paired with the resolved torch, then the pitfalls."""
    from envforge.packs.pitfalls import exact_parts, fired, message
    from envforge.packs.torch.compat import PAIR_EFFECT, PAIR_SEEN
    from envforge.packs.torch.knowledge import pairing, torch_knowledge

    torch, vision = versions.get("torch"), versions.get("torchvision")
    row = pairing(torch) if torch is not None else None
    if row is not None and vision is not None:
        from envforge.knowledge.models import in_range

        if not in_range(vision, row.torchvision):
            raise CompatibilityError(
                f"{pspec.platform}: resolved torchvision {vision} with torch {torch}: torch "
                f"{torch} goes with torchvision {row.torchvision}; {PAIR_EFFECT}; at install "
                f"or run time: {PAIR_SEEN}", source=row.source,
                fix=f"pin \"torchvision{row.torchvision}\" in [pypi] packages")
    for pitfall in fired(torch_knowledge().pitfalls, exact_parts(versions)):
        shown = {name: f"{name} {versions.get(name)}" for name in pitfall.when}
        raise CompatibilityError(f"{pspec.platform}: resolved {message(pitfall, shown)}",
                                 source=pitfall.source, fix=pitfall.fix)

"""The ``[torch]`` section of a spec: how PyTorch runs in verify's probe."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envforge.spec import Frozen, PlatformSpec

# The core's kernels the PyTorch probe runs (its KERNELS; a test keeps the two equal).
PROBE_KERNELS = ("elementwise", "gemm", "conv", "grad", "train")


class TorchSection(Frozen):
    """The device, the float type and the knobs a PyTorch run depends on; each has a
    default, so ``[torch]`` with no keys mounts the pack."""

    # the device verify's kernels run on: cuda is the first GPU (torch.device("cuda:0"))
    device: Literal["cpu", "cuda"] = "cpu"
    float_x: Literal["float32", "float64"] = "float32"
    # torch.set_num_threads in the probe: intra-op threads, so CPU timings compare
    threads: int = Field(default=1, ge=1, le=256)
    # torch.manual_seed for the DataLoader's shuffled order and the vision model's weights
    seed: int = Field(default=0, ge=0, lt=1 << 63)
    # worker processes of the DataLoader check, compared with 0 workers' batches
    dataloader_workers: int = Field(default=2, ge=1, le=64)


def torch_section(pspec: PlatformSpec) -> TorchSection:
    """The spec's [torch] table for one platform; its defaults where it is not mounted."""
    section = pspec.packs.get("torch")
    return section if isinstance(section, TorchSection) else TorchSection()


# Each key of the section, what it means and an example (the spec reference, envforge.specdoc)
SPEC_KEYS: dict[str, tuple[str, str]] = {
    "torch.device": ("where verify's kernels run: cpu, or cuda (the first GPU)", '"cpu"'),
    "torch.float_x": ("the float type of verify's kernels and model", '"float32"'),
    "torch.threads": ("torch.set_num_threads in verify's probe (1-256)", "1"),
    "torch.seed": ("torch.manual_seed in verify's probe: the DataLoader's shuffled order and "
                   "the vision model's random weights", "0"),
    "torch.dataloader_workers": ("worker processes of verify's DataLoader check, whose "
                                 "batches must equal those of 0 workers (1-64)", "2"),
}

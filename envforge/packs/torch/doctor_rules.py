"""Doctor's rules about PyTorch on a host: installed releases that fall into a known pitfall
(torchvision and Pillow 7, NumPy's ABI, torchvision not paired with torch) and a GPU the
locked wheel has no kernels for (a PyPI torch 1.4 on an sm_90 H200: "no kernel image is
available for execution on the device").

A kernel image built for sm_XY runs on a GPU of compute capability X.Z with Z >= Y only
(the same major); PTX would be compiled for newer GPUs by the driver, but the torch 1.x
wheels carry PTX for a part of their kernels at most (torch.toml's ``ptx``), so it is
named, not counted on."""


from __future__ import annotations

from collections.abc import Iterator

from packaging.version import Version

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.knowledge.models import in_range
from envforge.packs.pitfalls import exact_parts, fired, message
from envforge.packs.torch.knowledge import WheelRow, pairing, torch_knowledge, wheel

# NVIDIA's rule for kernel images, which the arch rule applies.
BINARY_COMPATIBILITY = ("https://docs.nvidia.com/cuda/cuda-c-programming-guide/"
                        "#binary-compatibility (\"a cubin object generated for compute "
                        "capability X.y will only execute on devices of compute capability X.z "
                        "where z>=y\")")


def _installed(facts: HostFacts) -> dict[str, str]:
    return dict(facts.env.versions) if facts.env is not None and facts.env.exists else {}


def release_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """Every pitfall the installed releases fall into, and a torchvision not built for the
    installed torch."""
    versions = _installed(facts)
    if not versions or facts.env is None:
        return
    prefix = facts.env.prefix
    for row in fired(torch_knowledge().pitfalls, exact_parts(versions)):
        shown = {name: f"{name} {versions.get(name)}" for name in row.when}
        yield Finding(id=f"torch.{row.id}", severity="error",
                      title=f"{prefix}: {message(row, shown)}", fix=Fix(text=row.fix),
                      source=row.source)
    torch, vision = versions.get("torch"), versions.get("torchvision")
    pair = pairing(torch) if torch is not None else None
    if pair is not None and vision is not None and not in_range(vision, pair.torchvision):
        yield Finding(id="torch.torchvision", severity="error",
                      title=f"{prefix}: torchvision {vision} with torch {torch}: torch {torch} "
                            f"goes with torchvision {pair.torchvision}",
                      fix=Fix(text=f"install torchvision{pair.torchvision}, or re-apply the "
                                   "lock (`envforge apply SPEC --sync`)"),
                      source=pair.source)


def _torch(facts: HostFacts, expected: Expected | None) -> str | None:
    """The installed torch release, else the lock's."""
    found = _installed(facts).get("torch")
    if found is None and expected is not None:
        found = expected.versions.get("torch")
    return found


def _sm(capability: str) -> int | None:
    major, _, minor = capability.partition(".")
    return int(major) * 10 + int(minor or 0) if (major + minor).isdigit() else None


def runs_on(row: WheelRow, sm: int) -> bool:
    """Whether one of the wheel's kernel images runs on a GPU of architecture ``sm``."""
    return any(arch.startswith("sm_") and int(arch[3:]) // 10 == sm // 10
               and int(arch[3:]) <= sm for arch in row.arches)


def _nearest(sm: int, after: WheelRow) -> WheelRow | None:
    """The oldest wheel envforge knows, newer than ``after``, with kernels for ``sm``."""
    rows = [row for row in torch_knowledge().wheels
            if row.platform == after.platform and runs_on(row, sm)
            and Version(row.torch.lstrip("=")) > Version(after.torch.lstrip("="))]
    return min(rows, key=lambda row: Version(row.torch.lstrip("=")), default=None)


def arch_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """Each GPU whose architecture the torch wheel's kernels are not built for: CUDA calls
    fail with "no kernel image is available for execution on the device"."""
    torch = _torch(facts, expected)
    row = wheel(torch, facts.platform) if torch is not None else None
    if row is None or torch is None:
        return
    wants_gpu = expected is not None and expected.device.startswith("cuda")
    built = f"{row.arches[0]}-{row.arches[-1]}"
    for gpu in facts.gpus:
        sm = _sm(gpu.compute_capability or "")
        if sm is None or runs_on(row, sm):
            continue
        nearest = _nearest(sm, row)
        fix = (f"torch {nearest.torch.lstrip('=')} (CUDA {nearest.cuda}, Python "
               f"{nearest.python}) is the nearest release whose PyPI wheel has sm_{sm} "
               f"kernels" if nearest is not None else
               f"no PyPI torch wheel envforge knows has sm_{sm} kernels")
        ptx = f" (PTX {', '.join(row.ptx)} for a part of its kernels only)" if row.ptx else ""
        yield Finding(
            id="torch.gpu-arch", severity="error" if wants_gpu else "warning",
            title=f"torch {torch}'s PyPI wheel (CUDA {row.cuda}) has kernels for {built}"
                  f"{ptx}, the GPU {gpu.index} ({gpu.name}) is sm_{sm}: no kernel image is "
                  "available for execution on the device",
            evidence=(Evidence(kind="value", where=f"GPU {gpu.index}",
                               text=f"{gpu.name}, compute capability {gpu.compute_capability}"),
                      Evidence(kind="value", where=row.library, text=" ".join(row.arches))),
            fix=Fix(text=fix), source=f"{row.source}; {BINARY_COMPATIBILITY}")

"""PyTorch's rules on a spec's pins, found before anything is resolved: PyPI's ``pytorch``
placeholder, torchvision not paired with its torch, a platform PyPI has no torch wheel for,
the pitfalls of its knowledge (Pillow 7, NumPy's ABI) and the kernels its probe runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packaging.version import Version

from envforge.compat import Pin, exact_pin, interval
from envforge.knowledge.models import in_range
from envforge.packs.base import Report
from envforge.packs.pitfalls import fired, message, spec_parts
from envforge.packs.torch.knowledge import (
    pairing,
    placeholder,
    pypi_platforms,
    stack_names,
    torch_knowledge,
)
from envforge.packs.torch.section import PROBE_KERNELS
from envforge.spec import PlatformSpec

_SPEC_SOURCE = "envforge spec format ([verify] kernels; envforge/packs/torch/probe.py)"
# What a torchvision built for another torch release does (both fixes are the pairing).
PAIR_EFFECT = ("torchvision's compiled ops are built against one torch release's C++ ABI, "
               "and its wheels from 0.4.0 on require that release exactly")
# Seen here: torchvision 0.4.2 installed by hand next to torch 1.4.0 (tests/packs/
# test_torch_e2e.py): resnet18 runs, torchvision.ops.nms fails loading torchvision/_C.so.
PAIR_SEEN = ("the resolver refuses (torchvision==0.5.0 depends on torch==1.4.0) or, installed "
             "by hand, torchvision's ops fail: ImportError: torchvision/_C.so: undefined "
             "symbol: _ZN6caffe26detail37_typeMetaDataInstance_preallocated_29E")
# (text the failure prints, what fixes it) for verify's rows
PAIR_HINT = ("torchvision/_C.so: undefined symbol",
             "torchvision is built for another torch release: install the one paired with the "
             "installed torch (https://github.com/pytorch/vision#installation), or re-apply "
             "the lock (`envforge apply SPEC --sync`)")


def compat_checks(pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                  report: Report) -> None:
    _placeholders(pins, report)
    _pairing(pins, report)
    _platform(pspec, pins, report)
    written = {stack_names().get(name, name): found[0].written
               for name, found in pins.items() if found}
    for row in fired(torch_knowledge().pitfalls, spec_parts(pspec, pins, stack_names())):
        report(row.id, message(row, written), row.source, row.fix)
    others = [k for k in pspec.verify.kernels if k not in PROBE_KERNELS]
    if others:
        report("torch-kernels", f"[verify] kernels {', '.join(others)}: the PyTorch probe runs "
               f"{', '.join(PROBE_KERNELS)} only", _SPEC_SOURCE,
               f"set [verify] kernels to a subset of {list(PROBE_KERNELS)}")


def _placeholders(pins: Mapping[str, Sequence[Pin]], report: Report) -> None:
    for name, found in pins.items():
        row = placeholder(name)
        for pin in found:
            if row is not None and pin.written.startswith(f"{row.index} "):
                report("torch-placeholder", f"{pin.written}: PyPI's \"{name}\" {row.versions} "
                       f"is a placeholder that installs nothing; at install time: {row.seen}",
                       row.source, row.fix)


def _pairing(pins: Mapping[str, Sequence[Pin]], report: Report) -> None:
    torch = exact_pin(pins, "torch") or exact_pin(pins, "pytorch")
    vision = pins.get("torchvision", ())
    row = pairing(str(torch)) if torch is not None else None
    wanted = interval(row.torchvision) if row is not None else None
    if row is None or wanted is None:
        return
    for pin in vision:
        if pin.releases.disjoint(wanted):
            torch_pin = (pins.get("torch") or pins["pytorch"])[0].written
            built_for = _torch_for(exact_pin(pins, "torchvision"))
            report("torch-torchvision", f"{pin.written} with {torch_pin}: torch {torch} goes "
                   f"with torchvision {row.torchvision}; {PAIR_EFFECT}; at install or run "
                   f"time: {PAIR_SEEN}", row.source,
                   f"pin \"torchvision{row.torchvision}\" with torch {torch} (or "
                   + (f"\"torch=={built_for}\", the release your torchvision is built for)"
                      if built_for else "the torch release your torchvision is built for)"),
                   repairs=(f"torchvision{row.torchvision}",
                            *((f"torch=={built_for}",) if built_for else ())))


def _torch_for(torchvision: Version | None) -> str | None:
    """The one torch release the pairing table builds an exact torchvision release for."""
    if torchvision is None:
        return None
    rows = [r for r in torch_knowledge().torchvision
            if in_range(str(torchvision), r.torchvision) and r.torch.startswith("==")]
    return rows[0].torch.removeprefix("==") if len(rows) == 1 else None


def _platform(pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]], report: Report) -> None:
    torch = exact_pin(pins, "torch")
    row = pypi_platforms(str(torch)) if torch is not None else None
    if row is None or pspec.platform in row.platforms:
        return
    written = next((pin.written for pin in pins["torch"] if pin.written.startswith("pypi ")),
                   None)
    if written is None:
        return  # conda's torch: its channels, not PyPI's files
    report("torch-platform", f"{written}: PyPI has no {pspec.platform} wheel of torch {torch} "
           f"(its wheels are for {', '.join(row.platforms)}); at install time: No matching "
           f"distribution found for torch=={torch}", row.source,
           f"drop {pspec.platform} from [project] platforms, or use a torch release PyPI has "
           f"{pspec.platform} wheels for (1.7.0 or later)")

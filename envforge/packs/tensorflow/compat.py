"""TensorFlow's rules on a spec's pins, found before anything is resolved: the pitfalls of
its knowledge (TensorFlow 2, protobuf 4, gast, CUDA and cuDNN, Python), a CPU-only build where
the spec asks for the GPU, and the kernels its probe runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envforge.compat import Pin, Releases, interval
from envforge.packs.base import Report
from envforge.packs.pitfalls import fired, message, spec_parts
from envforge.packs.tensorflow.knowledge import (
    GpuBuildRow,
    aliases,
    gpu_build,
    tensorflow_knowledge,
)
from envforge.packs.tensorflow.section import PROBE_KERNELS as KERNELS
from envforge.packs.tensorflow.section import tensorflow_section
from envforge.spec import PlatformSpec

_SPEC_SOURCE = "envforge spec format ([verify] kernels; envforge/packs/tensorflow/probe.py)"


def compat_checks(pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                  report: Report) -> None:
    parts = spec_parts(pspec, pins, aliases())
    written = {alias: pin.written for name, found in pins.items() for pin in found
               for alias in (aliases().get(name, name),)}
    written.update({"cuda": f"[cuda] version = {pspec.cuda.version}" if pspec.cuda else "",
                    "cudnn": f"[cudnn] version = {pspec.cudnn.version}" if pspec.cudnn else ""})
    for row in fired(tensorflow_knowledge().pitfalls, parts):
        report(row.id, message(row, written), row.source, row.fix)
    if tensorflow_section(pspec).device == "cuda":
        for name, found in pins.items():
            for pin in found:
                build = gpu_build(name)
                if build is not None and cpu_only(name, pin.releases):
                    report("tf1-cpu-build", cpu_message(pin.written, build), build.source,
                           build.fix)
    others = [k for k in pspec.verify.kernels if k not in KERNELS]
    if others:
        report("tf-kernels", f"[verify] kernels {', '.join(others)}: the TensorFlow probe runs "
               f"{', '.join(KERNELS)} only", _SPEC_SOURCE,
               f"set [verify] kernels to a subset of {list(KERNELS)}")


def cpu_only(distribution: str, releases: Releases) -> bool:
    """Every 1.x release allowed is a CPU-only build of ``distribution``."""
    row = gpu_build(distribution)
    tf1, gpu = interval("<2"), None if row is None else interval(row.tensorflow)
    return (gpu is not None and tf1 is not None and releases.within(tf1)
            and releases.disjoint(gpu))


def cpu_message(written: str, row: GpuBuildRow) -> str:
    return f'{written} with [tensorflow] device = "cuda": {row.effect}'

"""The driver and the GPU against the CUDA release in use (KNOWLEDGE §4)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

from envforge.doctor.facts import Expected, FrameworkConfig, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import (
    command_evidence,
    cuda_versions,
    gpu_intended,
    minor,
    older,
    sm,
    version_tuple,
)
from envforge.knowledge import compute_capability_range, knowledge, min_driver

# The key of FrameworkConfig.sources saying the framework compiles its kernels with NVRTC for
# the device's own compute_XY when it runs (Theano's GPU back-end), and the row saying so.
NVRTC_ARCH = "nvrtc-arch"


def _on_gpu(facts: HostFacts) -> FrameworkConfig:
    """The framework whose GPU start the driver findings describe: the first whose own
    settings ask for the GPU (``HostFacts.gpu_frameworks``), else the first that says what it
    does without one."""
    wanting = (facts.frameworks[name] for name in facts.gpu_frameworks
               if name in facts.frameworks)
    saying = (c for c in facts.frameworks.values() if c.without_gpu)
    return next(chain(wanting, saying), FrameworkConfig(name="the framework"))


def driver_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """No driver where a GPU is wanted; a driver older than the toolkit needs."""
    driver = facts.driver
    intended = gpu_intended(facts, expected)
    if driver.version is None:
        evidence = ((command_evidence(driver.output),) if driver.output is not None
                    else (Evidence(kind="value", where="NVIDIA driver", text=driver.source),))
        framework = _on_gpu(facts)
        source = framework.sources.get("gpu-activated", driver.source)
        if intended:
            yield Finding(
                id="driver.missing", severity="error",
                title=f"{framework.name} is set up for the GPU but no NVIDIA driver answers"
                      + (f": {framework.without_gpu}" if framework.without_gpu else ""),
                evidence=evidence,
                fix=Fix(text="install the NVIDIA driver until `nvidia-smi` works"
                             + (f", or set {framework.cpu_setting}"
                                if framework.cpu_setting else "")),
                source=source)
        else:
            yield Finding(id="driver.missing", severity="info",
                          title="no NVIDIA driver found; the GPU checks were skipped",
                          evidence=evidence, source=source)
        return
    shown = (command_evidence(driver.output, lines=4) if driver.output is not None
             else Evidence(kind="value", where="NVIDIA driver", text=driver.version))
    for version, where in cuda_versions(facts, expected):
        fact = min_driver(version, facts.platform)
        if fact is not None and older(driver.version, fact.value):
            yield Finding(
                id="driver.too-old", severity="error",
                title=f"driver {driver.version} is older than CUDA {version} needs "
                      f"({fact.value} on {facts.platform})",
                evidence=(shown, Evidence(kind="value", where=where, text=f"CUDA {version}")),
                fix=Fix(text=f"install NVIDIA driver {fact.value} or newer, or use a CUDA "
                             f"toolkit the driver runs (nvidia-smi: up to CUDA "
                             f"{driver.cuda or '?'})"),
                source=fact.source)
        elif fact is None and driver.cuda and \
                version_tuple(minor(version)) > version_tuple(driver.cuda):
            yield Finding(
                id="driver.too-old", severity="error",
                title=f"driver {driver.version} runs CUDA up to {driver.cuda}, not {version}",
                evidence=(shown, Evidence(kind="value", where=where, text=f"CUDA {version}")),
                fix=Fix(text=f"install a driver for CUDA {minor(version)} or newer"),
                source="nvidia-smi's `CUDA Version` (the knowledge base lists no minimum "
                       f"driver for CUDA {version} on {facts.platform})")


def architecture_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """A GPU older or newer than the toolkit compiles for.

    Newer is an error for a framework meant for the GPU that compiles its kernels with NVRTC
    for the device's own ``compute_XY`` (its ``NVRTC_ARCH`` source), which an older NVRTC
    refuses, so PTX JIT does not save it.
    """
    nvrtc = next((c for c in facts.frameworks.values() if NVRTC_ARCH in c.sources), None) \
        if gpu_intended(facts, expected) else None
    for gpu in facts.gpus:
        if gpu.compute_capability is None:
            continue
        have = sm(gpu.compute_capability)
        evidence = [Evidence(kind="value", where=f"GPU {gpu.index}",
                             text=f"{gpu.name}, compute capability {gpu.compute_capability}")]
        if facts.gpu_query is not None:
            evidence.append(command_evidence(facts.gpu_query))
        for version, where in cuda_versions(facts, expected):
            fact = compute_capability_range(version)
            if fact is None:
                continue
            low, high = fact.value
            seen = (*evidence, Evidence(kind="value", where=where, text=f"CUDA {version}"))
            if have < low:
                yield Finding(
                    id="gpu.arch-unsupported", severity="error",
                    title=f"CUDA {version} cannot build for {gpu.name} (sm_{have}): its oldest "
                          f"architecture is sm_{low}",
                    evidence=seen,
                    fix=Fix(text=f"use a CUDA toolkit that still supports sm_{have}"),
                    source=fact.source)
            elif have > high:
                ptx = knowledge().cuda.ptx_jit[0]
                yield Finding(
                    id="gpu.arch-unsupported", severity="error" if nvrtc else "warning",
                    title=f"{gpu.name} (sm_{have}) is newer than CUDA {version} knows "
                          f"(up to sm_{high})"
                          + (f": {nvrtc.name} asks NVRTC for compute_"
                             f"{gpu.compute_capability.replace('.', '')}, which it refuses"
                             if nvrtc else "; only PTX JIT of an older arch can run"),
                    evidence=seen,
                    fix=Fix(text="use a CUDA toolkit that knows this GPU (its NVRTC must "
                                 f"accept compute_{gpu.compute_capability.replace('.', '')})"),
                    source=f"{fact.source}; "
                           + (nvrtc.sources[NVRTC_ARCH] if nvrtc else ptx.source))

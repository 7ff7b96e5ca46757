"""The library names libgpuarray 0.7.6 (pygpu, Theano's GPU back-end) loads, by the rules
of its loader (KNOWLEDGE §3).

Windows: ``nvrtc64_<driver major><minor>.dll`` and ``cublas64_...``, digits from the
DRIVER's CUDA version, then fallbacks; CUDA 10+ ships other names, so copies under the
asked-for names are the known workaround, a safe fix. Linux: unversioned ``libnvrtc.so``,
``libcublas.so``, ``libcuda.so`` on the loader's path.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath, PureWindowsPath
from typing import Literal

from envforge.doctor.facts import Expected, HostFacts, Toolkit
from envforge.doctor.model import Evidence, FileCopy, Finding, Fix
from envforge.doctor.rules.common import (
    cuda_matches,
    gpu_intended,
    installed,
    library_entries,
)
from envforge.host.windows import normalize_entry
from envforge.knowledge import cuda_library_name
from envforge.packs.theano.libgpuarray import (
    libgpuarray_fact,
    libgpuarray_knowledge,
    libgpuarray_names,
    linux_loader_names,
    loader_name_mismatch,
)
from envforge.platforms import Os


def _framework(facts: HostFacts) -> str:
    """The framework that starts its GPU through pygpu: the one that says what it does
    without it (FrameworkConfig.without_gpu)."""
    return next((c.name for c in facts.frameworks.values() if c.without_gpu), "the framework")


def _bin(root: str) -> str:
    """``<root>/bin`` written the way the root is (a Windows root on Windows, POSIX in tests)."""
    if "\\" in root:
        return str(PureWindowsPath(root) / "bin")
    return str(PurePosixPath(root) / "bin")


def _child(folder: str, name: str) -> str:
    if "\\" in folder:
        return str(PureWindowsPath(folder) / name)
    return str(PurePosixPath(folder) / name)


def _on_path(facts: HostFacts, folder: str) -> str | None:
    """The PATH folder that is ``folder`` (compared as Windows compares them)."""
    wanted = normalize_entry(folder)
    return next((e.path for e in facts.path if normalize_entry(e.path) == wanted), None)


def _shipped(version: str, library: Literal["nvrtc", "cublas"]) -> str | None:
    fact = cuda_library_name(version, library, "win-64")
    return fact.value if fact is not None else None


def _toolkit(facts: HostFacts, expected: Expected | None, driver_cuda: str) -> Toolkit | None:
    """The toolkit whose libraries the copies come from: the locked one, else one of the
    driver's CUDA version whose bin is on PATH, else any of that version."""
    candidates = [t for t in facts.toolkits if t.version]
    if expected is not None and expected.cuda:
        candidates = [t for t in candidates if t.version and cuda_matches(expected.cuda, t.version)]
    on_path = {e.path for e in facts.path}
    candidates.sort(key=lambda t: (not cuda_matches(driver_cuda, t.version or ""),
                                   _bin(t.root) not in on_path))
    return candidates[0] if candidates else None


def windows_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    if facts.target.os is not Os.WINDOWS or facts.driver.cuda is None:
        return
    if not gpu_intended(facts, expected) and installed(facts, expected, "pygpu") is None:
        return
    names = libgpuarray_names("win-64", facts.driver.cuda)
    folders = [e.path for e in facts.path]

    def found(name: str) -> str | None:
        return next((f for f in folders if facts.holds(f, name)), None)

    loaded = next((i for i, n in enumerate(names.nvrtc) if found(n)), None)
    toolkit = _toolkit(facts, expected, facts.driver.cuda)
    mismatch = loader_name_mismatch(toolkit.version) if toolkit and toolkit.version else None
    mismatch_source = mismatch.source if mismatch is not None else \
        libgpuarray_knowledge().name_mismatch[0].source
    libraries: tuple[tuple[Literal["nvrtc", "cublas"], tuple[str, ...]], ...] = (
        ("nvrtc", names.nvrtc), ("cublas", names.cublas))
    for library, asked_all in libraries:
        index = loaded if loaded is not None else 0
        asked = asked_all[index] if library == "cublas" else asked_all[0]
        if found(asked):
            continue
        fallback = None if library == "cublas" or loaded is None else names.nvrtc[loaded]
        shipped = _shipped(toolkit.version, library) if toolkit and toolkit.version else None
        source_dir = _bin(toolkit.root) if toolkit else None
        evidence = [Evidence(kind="value", where="driver",
                             text=f"{facts.driver.version}, CUDA {facts.driver.cuda} "
                                  f"(libgpuarray asks for {asked})")]
        if toolkit is not None:
            evidence.append(Evidence(kind="value", where=_bin(toolkit.root),
                                     text=f"CUDA {toolkit.version} ships {shipped or '?'}"))
        if fallback:
            evidence.append(Evidence(kind="value", where=found(fallback) or "PATH",
                                     text=f"{fallback} (a fallback of an older CUDA)"))
        on_path = _on_path(facts, source_dir) if source_dir else None
        if shipped and on_path and facts.holds(on_path, shipped) \
                and not facts.target.same_file_name(shipped, asked):
            fix = Fix(text=f'copy "{_child(on_path, shipped)}" "{_child(on_path, asked)}"',
                      actions=(FileCopy(source=_child(on_path, shipped),
                                        target=_child(on_path, asked)),))
        else:
            fix = Fix(text=f"put CUDA {facts.driver.cuda}'s bin folder on PATH and copy its "
                           f"{library} DLL there as {asked}")
        yield Finding(
            id="libgpuarray.dll-name",
            severity="warning" if fallback else "error",
            title=(f"libgpuarray asks for {asked} (from the driver's CUDA "
                   f"{facts.driver.cuda}); no PATH folder has it"
                   + (f", so it loads {fallback} of an older CUDA" if fallback else
                      f": pygpu fails to start and {_framework(facts)} runs on the CPU")),
            evidence=tuple(evidence), fix=fix,
            source=f"{names.source}; {mismatch_source}")


def linux_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    if facts.target.os is not Os.LINUX:
        return
    if not gpu_intended(facts, expected) and installed(facts, expected, "pygpu") is None:
        return
    fact = libgpuarray_fact("linux-unversioned")
    folders = [e.path for e in library_entries(facts)] + list(facts.system_lib_dirs)
    missing = [n for n in linux_loader_names()
               if not any(facts.holds(f, n) for f in folders) and n not in facts.ld_cache]
    if not missing:
        return
    commands = []
    for name in missing:
        target = next((f"{f}/{v}" for f in facts.dirs for v in
                       sorted((facts.dirs[f].names), key=len)
                       if v.startswith(name + ".")), None)
        if target:
            commands.append(f"ln -s {target} ~/.local/lib/envforge-libs/{name}")
    fix = ("mkdir -p ~/.local/lib/envforge-libs && " + " && ".join(commands)
           + " && export LD_LIBRARY_PATH=~/.local/lib/envforge-libs${LD_LIBRARY_PATH:+:"
             "$LD_LIBRARY_PATH}") if commands else \
        f"install the NVIDIA driver and CUDA toolkit libraries that provide {', '.join(missing)}"
    if expected is not None:
        fix = f"envforge apply {expected.spec} (it makes these links), or: {fix}"
    yield Finding(
        id="libgpuarray.unversioned-libs", severity="error",
        title=f"libgpuarray dlopens {', '.join(missing)} by these exact names; none is on "
              "LD_LIBRARY_PATH, in the system library folders or in ldconfig's cache",
        evidence=tuple(Evidence(kind="value", where="searched", text=f) for f in folders[:8]),
        fix=Fix(text=fix), source=fact.source)

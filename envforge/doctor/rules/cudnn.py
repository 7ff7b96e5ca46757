"""cuDNN: in which toolkit tree, of which release, and where Windows finds its DLL (whether
Theano can use it: the Theano pack's doctor_rules)."""

from __future__ import annotations

from collections.abc import Iterator

from envforge.doctor.facts import CudnnHeader, Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import (
    Setting,
    cuda_matches,
    effective,
    flag_value,
    gpu_intended,
    theano_release,
)
from envforge.knowledge import cudnn_library_name, cudnn_support, cudnn_version_code
from envforge.platforms import Os


def header_evidence(header: CudnnHeader) -> Evidence:
    return Evidence(kind="file", where=header.file, text=f"CUDNN_MAJOR.MINOR.PATCHLEVEL = "
                                                        f"{header.version}")


def _same_release(found: str, locked: str) -> bool:
    return found.split(".")[:3] == locked.split(".")[:3]


def placement_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """cuDNN in a toolkit it was not built for; in another tree than the locked CUDA's; or
    another release than the lock's."""
    for toolkit in facts.toolkits:
        if toolkit.cudnn is None or toolkit.version is None:
            continue
        row = cudnn_support(toolkit.cudnn.version)
        if row is not None and not row.supports(toolkit.version):
            yield Finding(
                id="cudnn.toolkit-mismatch", severity="error",
                title=f"cuDNN {toolkit.cudnn.version} in {toolkit.root} was not built for CUDA "
                      f"{toolkit.version} (it exists for CUDA {', '.join(row.cuda)})",
                evidence=(header_evidence(toolkit.cudnn),
                          Evidence(kind="value", where=toolkit.root,
                                   text=f"CUDA {toolkit.version} ({toolkit.version_from})")),
                fix=Fix(text=f"install the cuDNN {toolkit.cudnn.version} build for CUDA "
                             f"{toolkit.version}, or cuDNN for CUDA "
                             f"{'.'.join(toolkit.version.split('.')[:2])}"),
                source=row.source)
    if expected is None or not expected.cudnn or not expected.cuda:
        return
    locked = [t for t in facts.toolkits if t.version and cuda_matches(expected.cuda, t.version)]
    others = [t for t in facts.toolkits if t not in locked and t.cudnn is not None]
    spec = expected.spec
    install = Fix(text=f"envforge apply {spec} --artifact cudnn=<the cuDNN {expected.cudnn} "
                       f"archive> (it copies cuDNN into CUDA {expected.cuda}'s tree)")
    for toolkit in locked:
        if toolkit.cudnn is None and others:
            yield Finding(
                id="cudnn.wrong-tree", severity="error",
                title=f"cuDNN is in {others[0].root} (CUDA {others[0].version}), not in the "
                      f"locked CUDA {expected.cuda}'s tree {toolkit.root}",
                evidence=tuple(header_evidence(t.cudnn) for t in others if t.cudnn),
                fix=install, source=f"{spec} ([cudnn] version, locked)")
        elif toolkit.cudnn is not None and not _same_release(toolkit.cudnn.version,
                                                             expected.cudnn):
            yield Finding(
                id="cudnn.not-locked", severity="error",
                title=f"{toolkit.root} holds cuDNN {toolkit.cudnn.version}; the lock wants "
                      f"{expected.cudnn}",
                evidence=(header_evidence(toolkit.cudnn),),
                fix=install, source=f"{spec} ([cudnn] version, locked)")


def theano_cudnn(facts: HostFacts, eff: dict[str, Setting]) -> CudnnHeader | None:
    """The cuDNN header Theano compiles against: dnn.include_path, else ``<base>/include``
    (base: dnn.base_path or cuda.root), then the compiler's default include folders."""
    folders = []
    if "dnn.include_path" in eff:
        folders.append(eff["dnn.include_path"].value)
    else:
        base = (eff["dnn.base_path"].value if "dnn.base_path" in eff else
                eff["cuda.root"].value if "cuda.root" in eff else facts.theano_cuda_root)
        if base:
            sep = "\\" if facts.target.os is Os.WINDOWS and "\\" in base else "/"
            folders.append(base.rstrip("/\\") + sep + "include")
    folders += facts.system_include_dirs
    for folder in folders:
        if folder in facts.cudnn_headers:
            return facts.cudnn_headers[folder]
    return None


def _dll(cudnn: str) -> str:
    known = cudnn_library_name(cudnn, "win-64")
    return known.value if known is not None else f"the cuDNN {cudnn} DLL"


def windows_dll_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """(Windows) the cuDNN DLL Theano loads by name is in neither dnn.bin_path nor PATH."""
    release = theano_release(facts, expected)
    if facts.target.os is not Os.WINDOWS or release.rules is None or \
            not gpu_intended(facts, expected):
        return
    eff = effective(facts, release.rules)
    if flag_value(eff, release.rules, "dnn.enabled") == "False":
        return
    header = theano_cudnn(facts, eff)
    wanted = header.version if header else expected.cudnn if expected else None
    fails_from = next((r.version_code for r in release.rules.cudnn
                       if r.kind == "conv-fails-from"), None)
    if wanted is None or (fails_from is not None and cudnn_version_code(wanted) >= fails_from):
        return  # no cuDNN meant; one too new is judged by cudnn.too-new-for-theano
    rows = [r for r in release.rules.cudnn_names if r.platform == facts.platform]
    names = rows[0].names if rows else ()
    row_source = rows[0].source if rows else ""
    folders = []
    if "dnn.bin_path" in eff:
        folders.append(eff["dnn.bin_path"].value)
    elif header is not None:
        folders.append(header.include.rstrip("/\\")[:-len("include")] + "bin")
    folders += [e.path for e in facts.path]
    for folder in folders:
        if any(facts.holds(folder, name) for name in names):
            return
    known = [(folder, name) for folder, listing in facts.dirs.items() for name in listing.names
             if name.casefold() in {n.casefold() for n in names}]
    target = folders[0] if folders and folders[0] not in (e.path for e in facts.path) \
        else "a folder on PATH"
    fix = (f'copy "{known[0][0]}\\{known[0][1]}" "{target}"' if known else
           f"put {names[0] if names else _dll(wanted)} in {target} (envforge apply does, "
           "from the cuDNN archive)")
    yield Finding(
        id="cudnn.dll-unreachable", severity="error",
        title=f"Theano looks for {', '.join(names)} to load cuDNN {wanted}; none is in "
              f"dnn.bin_path or on PATH",
        evidence=(*((header_evidence(header),) if header else ()),
                  *(Evidence(kind="value", where="searched", text=f) for f in folders[:6])),
        fix=Fix(text=fix), source=row_source)

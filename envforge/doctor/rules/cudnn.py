"""cuDNN: in which toolkit tree and of which release (whether a framework can use it, and
where it loads the DLL from: the packs' doctor rules)."""

from __future__ import annotations

from collections.abc import Iterator

from envforge.doctor.facts import CudnnHeader, Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import cuda_matches
from envforge.knowledge import cudnn_support


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

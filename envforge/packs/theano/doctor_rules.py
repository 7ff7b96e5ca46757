"""Doctor's rules about Theano on a host: its cuda.root, the cuDNN it compiles against and,
on Windows, the cuDNN DLL it loads by name."""

from __future__ import annotations

from collections.abc import Iterator

from envforge.doctor.facts import CudnnHeader, Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import gpu_intended, set_variable
from envforge.doctor.rules.cudnn import header_evidence
from envforge.knowledge import cudnn_library_name, cudnn_version_code
from envforge.packs.theano.doctor_common import (
    THEANO_FLAGS,
    Setting,
    effective,
    flag_value,
    theano_config,
    theano_flags_pairs,
    theano_release,
)
from envforge.packs.theano.knowledge import theano_knowledge
from envforge.packs.theano.rcfile import ConfigEdit
from envforge.platforms import Os, TargetPlatform


def root_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """Theano's cuda.root is not where cuDNN is: it looks for cuDNN only in ``<root>/include``."""
    release = theano_release(facts, expected)
    if release.rules is None or not gpu_intended(facts, expected):
        return
    eff = effective(facts, release.rules)
    if flag_value(eff, release.rules, "dnn.enabled") == "False" or \
            {"cuda.root", "dnn.base_path", "dnn.include_path"} & eff.keys():
        return
    config = theano_config(facts)
    root = config.cuda_root
    include = None if root is None else _join(root, "include", facts.target)
    if include is not None and include in facts.cudnn_headers:
        return
    with_cudnn = [t for t in facts.toolkits if t.cudnn is not None]
    if not with_cudnn and not (expected is not None and expected.cudnn):
        return
    row = next(r for r in theano_knowledge().flags if r.name == "cuda.root")
    target = with_cudnn[0].root if with_cudnn else None
    yield Finding(
        id="cuda.theano-root", severity="warning",
        title=(f"Theano's cuda.root is {root} ({config.cuda_root_from}), where no cuDNN "
               "header is: Theano will not find cuDNN" if root else
               "Theano finds no cuda.root (no CUDA_ROOT, CUDA_PATH or `nvcc` on PATH), so it "
               "finds no cuDNN"),
        evidence=(Evidence(kind="value", where="cuda.root", text=str(root)),
                  *(Evidence(kind="file", where=t.cudnn.file, text=f"cuDNN {t.cudnn.version}")
                    for t in with_cudnn if t.cudnn is not None)),
        fix=Fix(text=f"set [cuda] root = {target} in {config.write_to}, or "
                     + set_variable(facts.platform, "CUDA_ROOT", target) if target else
                     "set CUDA_ROOT to the toolkit that holds cuDNN"),
        source=row.source)


def _join(root: str, name: str, target: TargetPlatform) -> str:
    sep = "\\" if target.os is Os.WINDOWS and "\\" in root else "/"
    return root.rstrip("/\\") + sep + name


def dnn_disable_fix(facts: HostFacts, eff: dict[str, Setting], version: str) -> Fix:
    """``[dnn] enabled = False`` where it takes effect: the file that sets it, else the last
    file Theano reads; THEANO_FLAGS can only be changed by the user's shell."""
    current = eff.get("dnn.enabled")
    if current is not None and current.from_env:
        pairs = [f"{k}={'False' if k == current.raw_key else v}"
                 for k, v in theano_flags_pairs(theano_config(facts).variable_value)]
        return Fix(text=set_variable(facts.platform, THEANO_FLAGS, ",".join(pairs)))
    if current is not None:
        path = current.origin
    else:
        existing = [f.path for f in theano_config(facts).files if f.exists and f.error is None]
        path = existing[-1] if existing else theano_config(facts).write_to
    return Fix(text=f"in {path}: [dnn] enabled = False",
               actions=(ConfigEdit(path=path, op="set", section="dnn", key="enabled",
                                     value="False", note=f"cuDNN {version} is too new"),))


def cudnn_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """The cuDNN Theano compiles against, judged by the release's rules: too old, warned
    about, or (>= 8) without the API Theano 1.0.x's conv ops call."""
    release = theano_release(facts, expected)
    if release.rules is None or not gpu_intended(facts, expected):
        return
    eff = effective(facts, release.rules)
    enabled = flag_value(eff, release.rules, "dnn.enabled")
    header = theano_cudnn(facts, eff)
    if header is None or enabled == "False":
        return
    code = cudnn_version_code(header.version)
    evidence = [header_evidence(header)]
    if "dnn.enabled" in eff:
        evidence.append(eff["dnn.enabled"].evidence())
    for row in release.rules.cudnn:
        if row.kind == "conv-fails-from" and code >= row.version_code:
            yield Finding(
                id="cudnn.too-new-for-theano", severity="error",
                title=f"cuDNN {header.version} with Theano {release.version} and dnn.enabled = "
                      f"{enabled}: {row.effect}",
                evidence=tuple(evidence), fix=dnn_disable_fix(facts, eff, header.version),
                source=row.source)
        elif row.kind == "rejected-below" and code < row.version_code:
            yield Finding(
                id="cudnn.too-old-for-theano", severity="error",
                title=f"cuDNN {header.version} is {row.effect} by Theano {release.version} "
                      f"(below {row.version_code})",
                evidence=tuple(evidence),
                fix=Fix(text="install cuDNN 7.6.5 for your CUDA, or set [dnn] enabled = False"),
                source=row.source)
        elif row.kind == "warns-from" and code >= row.version_code and \
                not any(r.kind == "conv-fails-from" and code >= r.version_code
                        for r in release.rules.cudnn):
            yield Finding(
                id="cudnn.newer-than-theano", severity="info",
                title=f"cuDNN {header.version}: Theano {release.version} {row.effect}",
                evidence=tuple(evidence), source=row.source)


def theano_cudnn(facts: HostFacts, eff: dict[str, Setting]) -> CudnnHeader | None:
    """The cuDNN header Theano compiles against: dnn.include_path, else ``<base>/include``
    (base: dnn.base_path or cuda.root), then the compiler's default include folders."""
    folders = []
    if "dnn.include_path" in eff:
        folders.append(eff["dnn.include_path"].value)
    else:
        base = (eff["dnn.base_path"].value if "dnn.base_path" in eff else
                eff["cuda.root"].value if "cuda.root" in eff else theano_config(facts).cuda_root)
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

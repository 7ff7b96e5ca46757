"""Doctor's rules about TensorFlow 1.x on a host: installed releases that fall into a known
pitfall (protobuf 4, gast, NumPy's FutureWarnings) and, for a GPU TensorFlow, the versioned
libraries its loader asks for that no searched folder holds (``libcudart.so.10.0``)."""

from __future__ import annotations

from collections.abc import Iterator

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.packs.pitfalls import PitfallRow, exact_parts, fired, message
from envforge.packs.tensorflow.knowledge import aliases, gpu_libraries, tensorflow_knowledge
from envforge.platforms import Os


def _installed(facts: HostFacts) -> dict[str, str]:
    return dict(facts.env.versions) if facts.env is not None and facts.env.exists else {}


def _tensorflow(facts: HostFacts, expected: Expected | None) -> str | None:
    """The installed TensorFlow release, else the lock's."""
    found = _installed(facts).get("tensorflow")
    if found is None and expected is not None:
        found = expected.versions.get("tensorflow")
    return found


def release_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """Every pitfall (an error) and notice (info) the installed releases fall into."""
    versions = _installed(facts)
    if not versions or facts.env is None:
        return
    parts = exact_parts(versions, aliases())
    knowledge = tensorflow_knowledge()
    for rows, severity in ((knowledge.pitfalls, "error"), (knowledge.notices, "info")):
        for row in fired(rows, parts):
            # a one-part row is about specs mounting [tensorflow] (TensorFlow 2 is not the
            # pack's); an environment with TensorFlow 2 is not broken for holding it
            if len(row.when) > 1:
                yield _finding(facts, row, versions, severity)


def _finding(facts: HostFacts, row: PitfallRow, versions: dict[str, str],
             severity: str) -> Finding:
    assert facts.env is not None
    names = aliases()
    shown = {}
    evidence = []
    for part in row.when:
        name = next((k for k in versions if names.get(k, k) == part), part)
        shown[part] = f"{name} {versions.get(name)}"
        source = facts.env.sources.get(name)
        if source is not None:
            evidence.append(Evidence(kind="file", where=source, text=shown[part]))
    return Finding(id=f"tensorflow.{row.id}", severity="error" if severity == "error" else "info",
                   title=f"{facts.env.prefix}: {message(row, shown)}",
                   evidence=tuple(evidence), fix=Fix(text=row.fix), source=row.source)


def library_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """A GPU TensorFlow whose versioned CUDA/cuDNN libraries no searched folder holds."""
    import re

    from envforge.knowledge import library_file_patterns

    if not gpu_intended(facts, expected):
        return
    tensorflow = _tensorflow(facts, expected)
    if tensorflow is None:
        return
    visible = re.compile("^(?:" + "|".join(library_file_patterns()) + ")$",
                         re.IGNORECASE if facts.target.case_insensitive_files else 0)
    match facts.target.os:
        case Os.WINDOWS:
            folders = [e.path for e in facts.path]
        case Os.LINUX:
            folders = [*(e.path for e in facts.library_path), *facts.system_lib_dirs,
                       *(f"{t.root}/lib64" for t in facts.toolkits)]
    for row in gpu_libraries(tensorflow, facts.platform):
        name = row.files[facts.platform]
        if not visible.match(name):
            continue  # doctor's folder listings keep only the names the core knows
        if any(facts.holds(folder, name) for folder in folders):
            continue
        toolkits = ", ".join(f"{t.version} at {t.root}" for t in facts.toolkits) or "none found"
        yield Finding(
            id=f"tensorflow.library.{row.library}", severity="error",
            title=f"TensorFlow {tensorflow} on the GPU loads {name}, which no folder it "
                  f"searches holds (CUDA toolkits: {toolkits}): it logs \"Could not load "
                  f"dynamic library '{name}'\" and runs on the CPU",
            evidence=tuple(Evidence(kind="value", where="searched", text=folder)
                           for folder in dict.fromkeys(folders)),
            fix=Fix(text=f"install CUDA 10.0 with cuDNN 7 (TensorFlow's tested configuration) "
                         f"and put the folder holding {name} on "
                         f"{facts.target.library_path_var or 'PATH'}"),
            source=row.source)


def gpu_intended(facts: HostFacts, expected: Expected | None) -> bool:
    """A GPU lock of TensorFlow, or a TensorFlow installed on a host whose driver answers
    (1.15's one wheel holds the GPU build: it tries the GPU wherever a driver is)."""
    if expected is not None:
        return expected.device.startswith("cuda") and "tensorflow" in expected.versions
    return "tensorflow" in _installed(facts) and facts.driver.version is not None

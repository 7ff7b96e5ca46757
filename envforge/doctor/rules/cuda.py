"""Which CUDA a process gets: toolkits found, runtimes on the search path (as a framework
that re-sorts PATH leaves it), CUDA_* variables (and which one a framework reads for its
CUDA root), and (Windows) a PATH older than the registry's."""

from __future__ import annotations

from collections.abc import Iterator

from envforge.doctor.facts import Expected, FrameworkConfig, HostFacts, SearchEntry
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import (
    cuda_matches,
    entry_evidence,
    env_evidence,
    library_entries,
    set_variable,
)
from envforge.host.windows import normalize_entry
from envforge.knowledge import cuda_library_name, cuda_runtime_release
from envforge.platforms import Os, Platform


def runtime_version(name: str, platform: Platform) -> str | None:
    """The CUDA release a runtime library belongs to: ``10.2``, or ``11``/``12`` where one
    runtime serves a whole major release (``cudart64_110.dll``, ``libcudart.so.12``)."""
    return cuda_runtime_release(name, platform)


def runtime_matches(runtime: str, wanted: str) -> bool:
    if "." not in runtime:
        number = wanted.removeprefix(">=").removeprefix("==")
        return number.split(".")[0] == runtime or (wanted.startswith(">=") and
                                                   int(runtime) >= int(number.split(".")[0]))
    return cuda_matches(wanted, runtime)


def _source() -> str:
    fact = cuda_library_name("10.2", "cudart", "win-64")
    base = fact.source if fact is not None else "NVIDIA CUDA toolkit file names"
    return f"{base}; the loader takes the first folder on the search path holding the name"


def toolkit_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """The locked CUDA release is not installed."""
    if expected is None or not expected.cuda:
        return
    if any(t.version and cuda_matches(expected.cuda, t.version) for t in facts.toolkits):
        return
    seen = ", ".join(f"{t.version or '?'} at {t.root}" for t in facts.toolkits) or "none"
    yield Finding(
        id="cuda.not-found", severity="error",
        title=f"the lock wants CUDA {expected.cuda}; this host has {seen}",
        evidence=tuple(Evidence(kind="value", where=t.root,
                                text=f"CUDA {t.version or '?'} ({t.version_from}; {t.found_by})")
                       for t in facts.toolkits),
        fix=Fix(text=f"install CUDA {expected.cuda} (`envforge plan {expected.spec}` names the "
                     "installer), or point CUDA_PATH at it"),
        source=f"{expected.spec} ([cuda] version, locked)")


def _rewritten_order(order: list[tuple[SearchEntry, str, str]],
                     rewriter: FrameworkConfig) -> list[tuple[SearchEntry, str, str]]:
    """The order after a framework's PATH rewrite, as its pack computed it
    (``FrameworkConfig.path_order``; Theano's on win32: folders lower-cased and sorted)."""
    rank = {index: position for position, index in enumerate(rewriter.path_order)}
    return sorted(order, key=lambda found: rank.get(found[0].index, len(rank)))


def search_path_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """Several CUDA runtimes on the loader's search path: the first folder wins. Where a
    framework re-sorts PATH before the CUDA libraries load (Theano on Windows), the order the
    user gave decides nothing: the fix there is one CUDA on PATH, never "put it first"."""
    rewriter = next((c for c in facts.frameworks.values() if c.path_rewrite), None)
    resorted = rewriter is not None
    who = rewriter.name if rewriter is not None else ""
    order: list[tuple[SearchEntry, str, str]] = []
    for entry in library_entries(facts):
        listing = facts.listing(entry.path)
        for name in listing.names if listing else ():
            version = runtime_version(name, facts.platform)
            if version is not None and all(version != v for _, _, v in order):
                order.append((entry, name, version))
    if len(order) < 2:
        return
    source = f"{_source()}; {rewriter.path_rewrite}" if rewriter is not None else _source()
    if rewriter is not None:
        order = _rewritten_order(order, rewriter)
    variable = order[0][0].variable
    evidence = tuple(entry_evidence(e, f"{name}: CUDA {v}") for e, name, v in order)
    wanted = expected.cuda if expected is not None else None
    if wanted is None:
        yield Finding(
            id="cuda.several-on-path", severity="warning",
            title=f"{variable} holds {len(order)} CUDA runtimes "
                  f"({', '.join(v for _, _, v in order)}); "
                  + (f"{who} re-sorts PATH, so CUDA {order[0][2]}'s folder comes first"
                     if resorted else f"the first, CUDA {order[0][2]}, wins"),
            evidence=evidence,
            fix=Fix(text=f"keep only the toolkit you use in {variable}"
                    + ("" if resorted else ", or put its folder first")),
            source=source)
        return
    right = next((e for e, _, v in order if runtime_matches(v, wanted)), None)
    if right is None:
        fix = Fix(text=f"add CUDA {wanted}'s library folder to {variable}"
                       + (" and remove the other CUDA folders" if resorted else " first"))
    elif resorted:
        others = {e.index for e, _, _ in order if e.index != right.index}
        value = facts.target.pathsep.join(
            e.entry for e in library_entries(facts) if e.index not in others)
        fix = Fix(text=set_variable(facts.platform, variable, value))
    elif runtime_matches(order[0][2], wanted):
        return
    else:
        value = facts.target.pathsep.join(
            [right.entry, *(e.entry for e in library_entries(facts) if e.index != right.index)])
        fix = Fix(text=set_variable(facts.platform, variable, value))
    how = f" ({rewriter.path_rewrite_how})" if rewriter is not None and \
        rewriter.path_rewrite_how else ""
    first = (f"after {who}'s PATH rewrite{how} CUDA {order[0][2]}'s runtime comes first"
             if resorted else f"{variable} finds CUDA {order[0][2]}'s runtime first")
    if resorted and runtime_matches(order[0][2], wanted):
        title = (f"PATH holds {len(order)} CUDA runtimes; CUDA {wanted} loads only because "
                 f"its folder sorts first once {who} rewrites PATH")
        severity = "warning"
    else:
        title = f"{first}; the lock wants CUDA {wanted}"
        severity = "error"
    yield Finding(id="cuda.several-on-path", severity=severity, title=title,
                  evidence=evidence, fix=fix, source=source)


def variable_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """CUDA_ROOT / CUDA_PATH / CUDA_HOME naming nothing, or different toolkits (judged by the
    first framework that reads them for its CUDA root)."""
    reader = next((c for c in facts.frameworks.values() if c.cuda_root_variables), None)
    root_source = reader.sources.get("cuda-root", "") if reader is not None else \
        "CUDA_ROOT, CUDA_PATH, CUDA_HOME"
    existing = [v for v in facts.cuda_variables if v.exists]
    for var in facts.cuda_variables:
        if not var.exists:
            yield Finding(
                id="cuda.variables", severity="warning",
                title=f"{var.name} names {var.value}, which does not exist",
                evidence=(env_evidence(facts, var.name),),
                fix=Fix(text=f"point {var.name} at an installed toolkit, or unset it"),
                source=root_source)
    def key(value: str, version: str | None) -> str:
        """Folders compared as the target compares them (Windows: case, slashes, %VARS%)."""
        if version:
            return version
        return normalize_entry(value) if facts.target.os is Os.WINDOWS else value.rstrip("/")

    distinct = {key(v.value, v.version) for v in existing}
    reads = reader.cuda_root_variables if reader is not None else ()
    pick = next((v for v in existing if v.name in reads), None)
    wanted = expected.cuda if expected is not None else None
    wrong = (pick is not None and wanted is not None and pick.version is not None
             and not cuda_matches(wanted, pick.version))
    if len(distinct) < 2 and not wrong:
        return
    evidence = tuple(Evidence(kind="env", where=v.name,
                              text=f"{v.value}  (CUDA {v.version or '?'})") for v in existing)
    right = next((t for t in facts.toolkits
                  if wanted and t.version and cuda_matches(wanted, t.version)), None)
    if right is not None:
        fix_text = "; ".join(set_variable(facts.platform, v.name, right.root)
                             for v in existing if key(v.value, v.version) != key(right.root,
                                                                                  right.version))
    else:
        fix_text = "make CUDA_ROOT, CUDA_PATH and CUDA_HOME name the same toolkit, or unset " \
                   "the stale ones"
    if wrong and pick is not None and reader is not None:
        title = (f"{pick.name} (which {reader.name} reads for {reader.cuda_root_setting}) "
                 f"names CUDA {pick.version}; the lock wants {wanted}")
    else:
        title = "CUDA_ROOT, CUDA_PATH and CUDA_HOME name different toolkits: " + (
            f"{reader.name} reads {' then '.join(reader.cuda_root_variables)}, "
            if reader is not None else "") + "nvcc-based tools CUDA_PATH or CUDA_HOME"
    yield Finding(id="cuda.variables", severity="error" if wrong else "warning", title=title,
                  evidence=evidence, fix=Fix(text=fix_text or "unset the stale variable"),
                  source=root_source)


def registry_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """(Windows) PATH in the registry has folders this shell's PATH lacks: it started before
    an installer (or ``envforge apply``) changed them."""
    registry = facts.registry_path
    if registry is None:
        return
    have = {normalize_entry(e.path) for e in facts.path}
    missing = [e for e in registry.entries if normalize_entry(e) not in have]
    if not missing:
        return
    yield Finding(
        id="path.stale-shell", severity="warning",
        title=f"this shell's PATH lacks {len(missing)} folder(s) the registry's PATH has: "
              "programs started from it do not see them",
        evidence=tuple(Evidence(kind="value", where="registry PATH (system + user)", text=e)
                       for e in missing),
        fix=Fix(text="open a new terminal (or sign out and in) so it reads PATH again"),
        source="Windows: a process copies PATH from HKLM/HKCU\\Environment when it starts "
               "(envforge.host.windows)")

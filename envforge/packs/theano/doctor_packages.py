"""Doctor's rules about Theano's packages: the original Theano beside or instead of
Theano-PyMC, pygpu/NumPy/Python against the release, and the BLAS blas.ldflags links."""

from __future__ import annotations

from collections.abc import Iterator

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import installed
from envforge.knowledge import in_range
from envforge.packs.theano.doctor_common import Setting, effective, theano_config, theano_release
from envforge.packs.theano.doctor_flags import ldflags_parts
from envforge.packs.theano.knowledge import map_legacy_theano, theano_distribution, theano_knowledge
from envforge.platforms import Os


def _evidence(name: str, found: tuple[str, str]) -> Evidence:
    return Evidence(kind="file", where=found[1], text=f"{name} {found[0]}")


def environment_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """Without a spec: the environment judged has no Theano, so its package rules are moot."""
    env = facts.env
    if env is None or expected is not None or not env.exists or "theano" in env.versions:
        return
    yield Finding(
        id="env.no-theano", severity="info",
        title=f"{env.prefix} ({env.found_by}) has no Theano: the package checks "
              "were skipped",
        evidence=(Evidence(kind="value", where=env.found_by, text=env.prefix),),
        source="dist-info, egg-info and conda-meta records of the environment")


def distribution_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """The original Theano installed, alone or next to Theano-PyMC (both install theano/)."""
    env = facts.env
    if env is None or not env.exists:
        return
    found = theano_config(facts).distributions
    originals = [(name, row) for name in found
                 if (row := theano_distribution(name)) is not None and row.maps_to]
    if not originals:
        return
    name, row = originals[0]
    assert row.maps_to is not None
    evidence = tuple(Evidence(kind="value", where=env.prefix, text=f"{n} {v}")
                     for n, v in found.items())
    target = map_legacy_theano(f"{name}=={found[name]}")
    uninstall = " ".join(sorted(found))
    fix = (f"envforge apply {expected.spec}" if expected is not None else
           f'pip uninstall -y {uninstall} && pip install "{target}"')
    if len(found) > 1:
        yield Finding(
            id="packages.two-theanos", severity="error",
            title=f"{env.prefix} holds {' and '.join(f'{n} {v}' for n, v in found.items())}: "
                  f"both install the `{row.installs}` package, so its files are a mix of the "
                  "two",
            evidence=evidence, fix=Fix(text=fix), source=row.source)
        return
    yield Finding(
        id="packages.original-theano", severity="warning",
        title=f"{env.prefix} holds the original Theano {found[name]} (PyPI {name}); envforge's "
              f"rules are for {row.maps_to.split('==')[0]}",
        evidence=evidence, fix=Fix(text=fix + f"  ({row.why})"), source=row.source)


def release_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """pygpu outside 0.7; NumPy or Python too new for the installed Theano."""
    release = theano_release(facts, expected)
    if release.rules is None or not release.present:
        return
    rules = release.rules
    pygpu = installed(facts, expected, "pygpu")
    for pygpu_row in rules.pygpu:
        if pygpu is not None and not in_range(pygpu[0], pygpu_row.pygpu):
            yield Finding(
                id="packages.pygpu", severity="error",
                title=f"pygpu {pygpu[0]} is outside {pygpu_row.pygpu}, the only pygpu Theano "
                      f"{release.version} accepts: its GPU back-end stays off",
                evidence=(_evidence("pygpu", pygpu),),
                fix=Fix(text="install pygpu 0.7.6 with libgpuarray 0.7.6 (conda-forge)"),
                source=pygpu_row.source)
    numpy = installed(facts, expected, "numpy")
    if numpy is not None:
        rows = [r for r in rules.numpy if in_range(numpy[0], r.numpy) and r.status != "works"]
        breaks = next((r for r in rows if r.status == "breaks"), None)
        if breaks is not None:
            yield Finding(
                id="packages.numpy", severity="error",
                title=f"NumPy {numpy[0]} is too new for Theano {release.version}: "
                      f"{breaks.effect}",
                evidence=(_evidence("numpy", numpy),),
                fix=Fix(text="install numpy<1.24 (1.19.5 for Python 3.7 and 3.9) "
                             "and set [blas] ldflags for NumPy >= 1.22"),
                source=breaks.source)
        else:
            for row in rows:
                if row.status == "needs-flag" and row.flag is not None and \
                        row.flag not in effective(facts, rules):
                    yield Finding(
                        id="blas.flags-missing", severity="error",
                        title=f"NumPy {numpy[0]} with Theano {release.version} and no "
                              f"{row.flag}: {row.effect}",
                        evidence=(_evidence("numpy", numpy),
                                  Evidence(kind="value", where=row.flag, text="(not set)")),
                        fix=Fix(text=_blas_suggestion(facts)), source=row.source)
    python = installed(facts, expected, "python")
    for python_row in rules.python:
        if python is not None and python_row.status == "breaks" and \
                in_range(python[0], python_row.python):
            yield Finding(
                id="packages.python", severity="error",
                title=f"Python {python[0]} with Theano {release.version}: {python_row.effect}",
                evidence=(_evidence("python", python),),
                fix=Fix(text="use Python 3.7 (or 3.9 for the GPU back-end on Linux)"),
                source=python_row.source)


def _blas_suggestion(facts: HostFacts) -> str:
    for folder in facts.system_lib_dirs:
        listing = facts.listing(folder)
        for lib in ("openblas", "blas"):
            if listing and f"lib{lib}.so" in listing.names:
                return f"set [blas] ldflags = -L{folder} -l{lib}"
    return "set [blas] ldflags = -L<folder of libopenblas.so> -lopenblas"


def _names(facts: HostFacts, folder: str) -> tuple[str, ...]:
    listing = facts.listing(folder)
    return listing.names if listing is not None else ()


def blas_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """blas.ldflags names folders that are not there, or libraries the linker cannot find
    (``-lX`` needs ``libX.so``: a runtime-only ``libX.so.0`` does not do)."""
    release = theano_release(facts, expected)
    if release.rules is None:
        return
    setting: Setting | None = effective(facts, release.rules).get("blas.ldflags")
    if setting is None or not setting.value.strip():
        return
    row = next(r for r in theano_knowledge().flags if r.name == "blas.ldflags")
    mingw = facts.target.os is Os.WINDOWS  # MinGW's ld, whose own folders are not known here
    dirs, libs = ldflags_parts(setting.value)
    for folder in dirs:
        listing = facts.listing(folder)
        if listing is not None and not listing.exists:
            yield Finding(
                id="blas.flags-broken", severity="error",
                title=f"blas.ldflags names -L{folder}, which does not exist: Theano cannot "
                      "link its BLAS ops",
                evidence=(setting.evidence(),),
                fix=Fix(text=f"fix blas.ldflags in {setting.origin} to name the folder that "
                             "holds the BLAS library"),
                source=row.source)
    if mingw and not dirs:
        return
    search = [*dirs, *([] if mingw else facts.system_lib_dirs)]
    for lib in libs:
        names = facts.target.linker_files(lib)
        if any(facts.holds(folder, name) for folder in search for name in names):
            continue
        versioned = [(folder, name) for folder in search
                     for name in _names(facts, folder) if name.startswith(f"lib{lib}.so.")]
        hint = (f"; only {versioned[0][1]} is in {versioned[0][0]}: "
                f"ln -s {versioned[0][1]} {versioned[0][0]}/lib{lib}.so" if versioned else "")
        yield Finding(
            id="blas.flags-broken", severity="error",
            title=f"blas.ldflags links -l{lib}, but no {' or '.join(names[:2])} is in "
                  f"{', '.join(search[:4]) or 'the -L folders'}{hint}",
            evidence=(setting.evidence(),),
            fix=Fix(text=(f"ln -s {versioned[0][1]} {versioned[0][0]}/lib{lib}.so" if versioned
                          else f"install the library, or fix blas.ldflags in {setting.origin}")),
            source=row.source)

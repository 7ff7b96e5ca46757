"""Doctor's rules about the C++ compiler Theano builds its C code with: present, first on
PATH, posix threads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import assert_never

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import (
    command_evidence,
    entry_evidence,
    env_evidence,
    gpu_intended,
    set_variable,
)
from envforge.host.windows import arrange_path
from envforge.knowledge import find_artifact
from envforge.packs.theano.doctor_common import effective, theano_release
from envforge.packs.theano.knowledge import theano_knowledge
from envforge.platforms import Os


def _cxx_source() -> str:
    return next(r.source for r in theano_knowledge().flags if r.name == "cxx")


def _install_text(facts: HostFacts) -> str:
    match facts.target.os:
        case Os.WINDOWS:
            mingw = find_artifact("compiler", facts.platform, "8.1.0")
            name = mingw.filename if mingw else "MinGW-w64 (posix threads, seh)"
            return (f"install MinGW-w64 ({name}) and put its bin first on PATH, or in a conda "
                    "environment `conda install -c msys2 m2w64-toolchain`")
        case Os.LINUX:
            return "install g++ (Debian/Ubuntu: `apt-get install g++`)"
        case _:
            assert_never(facts.target.os)


def compiler_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """No g++ (or ``cxx`` emptied): Theano runs slow Python code, and the GPU back-end refuses."""
    release = theano_release(facts, expected)
    eff = effective(facts, release.rules) if release.rules is not None else {}
    row = next(r for r in theano_knowledge().flags if r.name == "cxx")
    intended = gpu_intended(facts, expected)
    cxx = eff.get("cxx")
    if cxx is not None and cxx.value.strip():
        return  # the user named a compiler; Theano uses that one
    if cxx is not None or facts.gxx is None:
        severity = "error" if intended else "warning"
        why = ("the GPU back-end refuses to start (\"The new gpu-backend need a c++ compiler\")"
               if intended else "Theano falls back to its slow Python implementations")
        evidence = (cxx.evidence(),) if cxx is not None else (
            env_evidence(facts, "PATH"),)
        yield Finding(
            id="compiler.missing", severity=severity,
            title=("cxx is set empty" if cxx is not None else "no g++ on PATH") + f": {why}",
            evidence=evidence,
            fix=Fix(text=("remove the empty cxx setting" if cxx is not None
                          else _install_text(facts))),
            source=f"{row.source} ({row.note})")


def windows_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """(Windows) MSVC ahead of MinGW on PATH; a MinGW built with win32 threads."""
    if facts.target.os is not Os.WINDOWS or facts.gxx is None:
        return
    gxx = facts.gxx
    if facts.msvc is not None and facts.msvc.index >= 0 and \
            (gxx.path_index < 0 or facts.msvc.index < gxx.path_index):
        path_value = next((v for k, v in facts.environ.items() if k.upper() == "PATH"), "")
        mingw = next((e.entry for e in facts.path if e.index == gxx.path_index), None)
        fix = (set_variable(facts.platform, "PATH",
                            arrange_path(path_value, mingw_bin=mingw).value)
               if mingw else "put MinGW-w64's bin folder before Visual Studio's on PATH")
        yield Finding(
            id="compiler.msvc-first", severity="warning",
            title="MSVC's cl.exe comes before MinGW's g++ on PATH: builds that take the first "
                  "compiler they find (distutils, CMake) get MSVC, whose libraries do not mix "
                  "with the MinGW code Theano compiles",
            evidence=(entry_evidence(facts.msvc, "cl.exe"),
                      Evidence(kind="value", where=f"PATH[{gxx.path_index}]"
                               if gxx.path_index >= 0 else gxx.found_by, text=gxx.path)),
            fix=Fix(text=fix), source=_cxx_source())
    if gxx.thread_model == "win32":
        artifact = find_artifact("compiler", "win-64", "8.1.0")
        locked = expected is not None and expected.compiler_threads == "posix"
        yield Finding(
            id="compiler.mingw-threads", severity="error" if locked else "warning",
            title=f"{gxx.path} is a MinGW-w64 built with win32 threads; "
                  + ("the spec wants posix" if locked else
                     "the known-good build for Theano uses posix threads (std::thread, "
                     "<mutex> are missing otherwise)"),
            evidence=(command_evidence(gxx.output, lines=20),) if gxx.output else (),
            fix=Fix(text=_install_text(facts)),
            source=(f"{artifact.source} ({artifact.filename})" if artifact else
                    "mingw-w64 builds (posix-seh)"))

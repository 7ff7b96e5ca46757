"""What several rules derive from the facts: installed versions, whether a GPU is meant to
be used, evidence and shell commands. Pure, like the rules."""

from __future__ import annotations

import shlex
from typing import assert_never

from envforge.doctor.facts import CommandOutput, Expected, HostFacts, SearchEntry
from envforge.doctor.model import Evidence
from envforge.platforms import Os, Platform, TargetPlatform, platform_of


def installed(facts: HostFacts, expected: Expected | None,
              name: str) -> tuple[str, str] | None:
    """(version, where it was read) of a package: the environment when there is one, else
    the lock. A missing package in an existing environment is missing, whatever the lock says."""
    env = facts.env
    if env is not None and env.exists:
        if name in env.versions:
            return env.versions[name], env.sources.get(name, env.prefix)
        return None
    if expected is not None and name in expected.versions:
        return expected.versions[name], f"the lock of {expected.spec}"
    return None


def gpu_intended(facts: HostFacts, expected: Expected | None) -> bool:
    """Whether this host is meant to run on a GPU: the lock's device, or a framework whose
    own settings ask for one (``HostFacts.gpu_frameworks``, as ``diagnose`` asked the packs)."""
    if expected is not None and expected.device.startswith("cuda"):  # OpenCL: not NVIDIA's
        return True
    return bool(facts.gpu_frameworks)


def version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split("."):
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def older(a: str, b: str) -> bool:
    """Whether dotted version ``a`` is older than ``b`` (``440.33`` < ``440.33.01``)."""
    ta, tb = version_tuple(a), version_tuple(b)
    width = max(len(ta), len(tb))
    return ta + (0,) * (width - len(ta)) < tb + (0,) * (width - len(tb))


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def cuda_matches(wanted: str, version: str) -> bool:
    """``10.2`` pins a release line; ``>=11.8`` sets a minimum."""
    if wanted.startswith(">="):
        return version_tuple(minor(version)) >= version_tuple(wanted[2:])
    wanted = wanted.removeprefix("==")
    return version == wanted or minor(version) == minor(wanted)


def set_variable(platform: Platform | TargetPlatform, name: str, value: str) -> str:
    """The shell command that sets a variable for this session (cmd.exe; POSIX sh)."""
    target = platform_of(platform)
    match target.os:
        case Os.WINDOWS:
            return f'set "{name}={value}"'
        case Os.LINUX:
            return f"export {name}={shlex.quote(value)}"
        case _:
            assert_never(target.os)


def env_evidence(facts: HostFacts, name: str) -> Evidence:
    value = next((v for k, v in facts.environ.items() if k.upper() == name.upper()), "(unset)")
    return Evidence(kind="env", where=name, text=value)


def entry_evidence(entry: SearchEntry, what: str) -> Evidence:
    return Evidence(kind="env", where=f"{entry.variable}[{entry.index}]",
                    text=f"{entry.entry}  ({what})")


def command_evidence(out: CommandOutput, *, lines: int = 12) -> Evidence:
    text = "\n".join(out.output.splitlines()[:lines])
    return Evidence(kind="command", where=" ".join(out.argv) + f"  (exit {out.returncode})",
                    text=text)


def library_entries(facts: HostFacts) -> tuple[SearchEntry, ...]:
    """Where the loader looks for shared libraries: PATH on Windows, LD_LIBRARY_PATH on Linux."""
    match facts.target.os:
        case Os.WINDOWS:
            return facts.path
        case Os.LINUX:
            return facts.library_path
        case _:
            assert_never(facts.target.os)


def sm(capability: str) -> int:
    major, _, rest = capability.partition(".")
    return int(major) * 10 + int(rest or 0)


def cuda_versions(facts: HostFacts, expected: Expected | None) -> list[tuple[str, str]]:
    """The CUDA release(s) the GPU rules judge, with where each was seen.

    With a lock: the toolkits matching it (or the locked number when none is installed).
    Without: the toolkit the environment points at (CUDA_ROOT/CUDA_PATH/nvcc first), since
    that one, not every toolkit lying around, is the one in use.
    """
    if expected is not None and expected.cuda:
        matching = [(t.version, t.root) for t in facts.toolkits
                    if t.version and cuda_matches(expected.cuda, t.version)]
        if matching:
            return matching
        if not expected.cuda.startswith(">="):
            return [(expected.cuda.removeprefix("=="), f"the lock of {expected.spec}")]
        return []
    first = next((t for t in facts.toolkits if t.version), None)
    return [(first.version, first.root)] if first is not None and first.version else []

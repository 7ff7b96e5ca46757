"""What several rules derive from the facts: the Theano release, its effective settings,
whether a GPU is meant to be used. Pure, like the rules."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import assert_never

from envforge.doctor.facts import CommandOutput, Expected, HostFacts, SearchEntry
from envforge.doctor.flags import parse_theano_flags
from envforge.doctor.model import Evidence
from envforge.knowledge import TheanoRules, UnknownFactError, reference_theano, theano_rules
from envforge.platforms import Os, Platform, TargetPlatform, platform_of

THEANO_FLAGS = "THEANO_FLAGS"


@dataclass(frozen=True)
class TheanoRelease:
    version: str
    how: str
    rules: TheanoRules | None  # None: the knowledge base has no rows for this release
    present: bool  # installed (or locked); False: assumed, so package rules do not apply


def theano_release(facts: HostFacts, expected: Expected | None) -> TheanoRelease:
    """The installed Theano, else the locked one, else the project's reference release."""
    found = installed(facts, expected, "theano")
    version, how = found if found else (reference_theano(), "assumed (no environment or lock "
                                                         "says which Theano)")
    try:
        return TheanoRelease(version, how, theano_rules(version), found is not None)
    except UnknownFactError:
        return TheanoRelease(version, how, None, found is not None)


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


@dataclass(frozen=True)
class Setting:
    """One flag as one source sets it; ``name`` is canonical (dotted) when Theano applies it."""

    name: str
    value: str
    origin: str  # a .theanorc path, or THEANO_FLAGS
    line: int | None
    raw_key: str
    applied: bool = True  # False: THEANO_FLAGS spells it so that this release ignores it

    @property
    def from_env(self) -> bool:
        return self.origin == THEANO_FLAGS

    def evidence(self) -> Evidence:
        if self.from_env:
            return Evidence(kind="env", where=THEANO_FLAGS, text=f"{self.raw_key}={self.value}")
        where = f"{self.origin}:{self.line}" if self.line else self.origin
        section, _, key = self.name.rpartition(".")
        shown = f"[{section or 'global'}] {key} = {self.value}"
        return Evidence(kind="file", where=where, text=shown)


def theano_flags_pairs(value: str | None) -> list[tuple[str, str]]:
    return parse_theano_flags(value or "")


def applied_name(key: str, rules: TheanoRules) -> str | None:
    """The flag a THEANO_FLAGS key sets in this release, or None when the spelling is wrong."""
    if rules.spelling == "dots":
        return None if "__" in key else key
    return None if "." in key else key.replace("__", ".")


def settings(facts: HostFacts, rules: TheanoRules) -> list[Setting]:
    """Every setting, lowest precedence first: the files in Theano's reading order, then
    THEANO_FLAGS."""
    found = []
    for rc in facts.theanorc:
        for name, value in rc.flags.items():
            found.append(Setting(name=name, value=value, origin=rc.path,
                                 line=rc.lines.get(name), raw_key=name))
    for key, value in theano_flags_pairs(facts.theano_flags):
        applied = applied_name(key, rules)
        found.append(Setting(name=applied or key, value=value, origin=THEANO_FLAGS, line=None,
                             raw_key=key, applied=applied is not None))
    return found


def effective(facts: HostFacts, rules: TheanoRules) -> dict[str, Setting]:
    """What Theano ends up with for each flag some source sets: the last applied one wins."""
    result: dict[str, Setting] = {}
    for setting in settings(facts, rules):
        if setting.applied:
            result[setting.name] = setting
    return result


def flag_value(eff: dict[str, Setting], rules: TheanoRules | None, name: str) -> str:
    if name in eff:
        return eff[name].value
    if rules is not None and name in rules.flags:
        return rules.flags[name].default
    return ""


def gpu_intended(facts: HostFacts, expected: Expected | None) -> bool:
    """Whether this host is meant to run Theano on a GPU: the lock, the device flag or pygpu."""
    if expected is not None and expected.device.startswith(("cuda", "opencl")):
        return True
    release = theano_release(facts, expected)
    if release.rules is not None:
        device = flag_value(effective(facts, release.rules), release.rules, "device")
        if device.startswith(("cuda", "opencl", "gpu")):
            return True
    return installed(facts, expected, "pygpu") is not None


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

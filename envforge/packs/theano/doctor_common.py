"""What the Theano pack's doctor rules derive from the facts: the Theano release and its
effective settings (the .theanorc files in reading order, then THEANO_FLAGS). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from envforge.doctor.facts import Expected, FrameworkConfig, HostFacts
from envforge.doctor.model import Evidence
from envforge.doctor.rules.common import installed
from envforge.knowledge import UnknownFactError
from envforge.packs.theano.doctor_flags import parse_theano_flags
from envforge.packs.theano.knowledge import TheanoRules, reference_theano, theano_rules

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
    for rc in theano_config(facts).files:
        for name, value in rc.flags.items():
            found.append(Setting(name=name, value=value, origin=rc.path,
                                 line=rc.lines.get(name), raw_key=name))
    for key, value in theano_flags_pairs(theano_config(facts).variable_value):
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
    """Whether Theano means to use a GPU here, CUDA or OpenCL (what libgpuarray and Theano's
    own GPU rules need): its effective device flag names one, or its GPU back-end, pygpu, is
    installed (or locked)."""
    return installed(facts, expected, "pygpu") is not None or \
        _device(facts, expected).startswith(("cuda", "opencl", "gpu"))


def cuda_intended(facts: HostFacts, expected: Expected | None) -> bool:
    """Whether Theano means to use an NVIDIA GPU (the pack's ``gpu_intended``, which turns
    on doctor's NVIDIA driver and GPU rules): a device flag of ``cuda*`` or the old back-end's
    ``gpu*``, or pygpu installed with no OpenCL device named (the device flag's row in
    theano.toml: cpu, cuda* and opencl*, whose OpenCL devices need no NVIDIA driver)."""
    device = _device(facts, expected)
    if device.startswith("opencl"):
        return False
    return device.startswith(("cuda", "gpu")) or installed(facts, expected, "pygpu") is not None


def _device(facts: HostFacts, expected: Expected | None) -> str:
    release = theano_release(facts, expected)
    if release.rules is None:
        return ""
    return flag_value(effective(facts, release.rules), release.rules, "device")


class TheanoConfig(FrameworkConfig):
    """What only Theano's rules read, beside the core's part."""

    write_to: str = ""  # the .theanorc whose settings win: the file a fix writes
    # every distribution installing the ``theano`` package -> version: two overwrite each other
    distributions: dict[str, str] = Field(default_factory=dict)


def theano_config(facts: HostFacts) -> TheanoConfig:
    """Theano's configuration as observed (packs/theano/doctor_observe.py)."""
    found = facts.frameworks.get("theano")
    return found if isinstance(found, TheanoConfig) else TheanoConfig()

"""Theano's configuration as the installed release reads it: .theanorc files and THEANO_FLAGS.

Removed and unknown flags (ignored silently in a file, with a warning in THEANO_FLAGS),
the blog's wrong forms, values Theano refuses at import, flags spelled for another
release, THEANO_FLAGS silently overriding a file, a .theanorc in the current folder
that is never read, and a GPU preallocation larger than the memory free.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator

from envforge.doctor.facts import Expected, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.doctor.rules.common import command_evidence, set_variable
from envforge.packs.theano.doctor_common import (
    THEANO_FLAGS,
    Setting,
    effective,
    settings,
    theano_config,
    theano_flags_pairs,
    theano_release,
)
from envforge.packs.theano.knowledge import (
    FlagSchema,
    TheanoRules,
    erratum_for_flag,
    theano_knowledge,
)
from envforge.packs.theano.rcfile import ConfigEdit

_SPECIAL = frozenset("\"'\\#, ")


def _reading(fact_id: str) -> str:
    return next(r.source for r in theano_knowledge().config_reading if r.id == fact_id)


def corrected_value(schema: FlagSchema, value: str) -> str | None:
    """The value meant, where it is unambiguous: ``gpu0`` -> ``cuda0``, ``true`` -> ``True``."""
    if schema.type == "device":
        old = re.fullmatch(r"gpu(\d*)", value)
        return f"cuda{old[1]}" if old else None
    if schema.type == "enum":
        same = [c for c in schema.choices if c.lower() == value.lower()]
        return same[0] if len(same) == 1 else None
    if schema.type == "bool":
        return {"true": "True", "false": "False"}.get(value.lower())
    return None


def _location(name: str) -> tuple[str, str]:
    """The (section, key) a dotted name was read from: ``dnn.enabled`` -> (dnn, enabled)."""
    section, _, key = name.rpartition(".")
    return section or "global", key


def _respelled(key: str, rules: TheanoRules) -> str | None:
    """A THEANO_FLAGS key in the other release's spelling, as this release wants it."""
    dotted = key.replace("__", ".")
    if dotted in rules.known_flags:
        return rules.spell(dotted)
    return None


def corrected_flags(facts: HostFacts, rules: TheanoRules) -> str:
    """THEANO_FLAGS with every pair fixed that can be: respelled, renamed, valued right;
    pairs of removed flags dropped."""
    pairs = []
    for key, value in theano_flags_pairs(theano_config(facts).variable_value):
        name = key.replace("__", ".") if rules.spelling == "double-underscores" or \
            key.replace("__", ".") in rules.known_flags else key
        erratum = erratum_for_flag(name)
        if name not in rules.known_flags:
            if erratum is not None and erratum.replacement:
                name = erratum.replacement
            elif rules.removed_flag(name) is not None:
                continue
        schema = rules.flags.get(name)
        if schema is not None and schema.problem(value):
            value = corrected_value(schema, value) or value
        if _SPECIAL & set(value):
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        pairs.append(f"{rules.spell(name) if name in rules.known_flags else key}={value}")
    return ",".join(pairs)


def config_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    release = theano_release(facts, expected)
    if release.rules is None:
        if theano_config(facts).variable_value or any(f.exists for f in theano_config(facts).files):
            yield Finding(
                id="config.unknown-release", severity="info",
                title=f"Theano {release.version} ({release.how}): the knowledge base has no "
                      "rules for it, so its configuration was not checked",
                source="envforge/packs/theano/theano.toml")
        return
    rules = release.rules
    for rc in theano_config(facts).files:
        if rc.error is not None:
            yield Finding(
                id="config.unparsable", severity="error",
                title=f"{rc.path} cannot be parsed: `import theano` fails the same way",
                evidence=(Evidence(kind="file", where=rc.path, text=rc.error),),
                fix=Fix(text=f"fix the syntax of {rc.path} (sections in [brackets], key = value)"),
                source=_reading("theanorc-default"))
    found = settings(facts, rules)
    env_fix = Fix(text=set_variable(facts.platform, THEANO_FLAGS,
                                    corrected_flags(facts, rules)))
    for setting in found:
        yield from _judge(setting, facts, rules, release.version, env_fix)
    yield from _overrides(found)
    yield from _cwd(facts)
    yield from _preallocate(facts, rules)


def _judge(setting: Setting, facts: HostFacts, rules: TheanoRules, version: str,
           env_fix: Fix) -> Iterator[Finding]:
    where = "THEANO_FLAGS" if setting.from_env else setting.origin
    if setting.from_env and not setting.applied:
        right = _respelled(setting.raw_key, rules)
        if right is not None:
            yield Finding(
                id="config.wrong-spelling", severity="error",
                title=f"THEANO_FLAGS spells {setting.raw_key}; Theano {version} reads "
                      f"{right} ({'dots' if rules.spelling == 'dots' else '`__`'}), so the "
                      "setting is ignored",
                evidence=(setting.evidence(),), fix=env_fix, source=rules.spelling_source)
            return
    name = setting.name if setting.applied else setting.raw_key.replace("__", ".")
    section, key = _location(name)
    if name in rules.known_flags:
        schema = rules.flags.get(name)
        problem = schema.problem(setting.value) if schema is not None else None
        if schema is None or problem is None:
            return
        better = corrected_value(schema, setting.value)
        erratum = erratum_for_flag(name)
        if setting.from_env:
            fix = env_fix
        elif better is not None:
            fix = Fix(text=f"in {setting.origin}: [{section}] {key} = {better}",
                      actions=(ConfigEdit(path=setting.origin, op="set", section=section,
                                            key=key, value=better),))
        else:
            fix = Fix(text=f"in {setting.origin}: set [{section}] {key} to one of "
                           f"{', '.join(schema.choices) or 'the values Theano takes'}")
        yield Finding(
            id="config.invalid-value", severity="error",
            title=f"{problem}: `import theano` raises ValueError"
                  + (f" (the blog's `{erratum.wrong}`; correct: {erratum.correct})"
                     if erratum is not None and erratum.flag == name else ""),
            evidence=(setting.evidence(),), fix=fix,
            source=f"{schema.source}; {_reading('invalid-value')}")
        return
    ignored = ("Theano warns \"does not recognise this flag\" and ignores it" if setting.from_env
               else "Theano ignores it silently")
    erratum = erratum_for_flag(name)
    removed = rules.removed_flag(name)
    if erratum is not None and erratum.replacement:
        new_section, new_key = rules.theanorc_location(erratum.replacement)
        if setting.from_env:
            fix = env_fix
        else:
            fix = Fix(text=f"in {setting.origin}: replace `[{section}] {key} = {setting.value}` "
                           f"with `[{new_section}] {new_key} = {setting.value}`",
                      actions=(ConfigEdit(path=setting.origin, op="move", section=section,
                                            key=key, new_section=new_section, new_key=new_key,
                                            note=f"[{section}] {key} is not a Theano flag; "
                                                 f"moved to [{new_section}] {new_key}"),))
        yield Finding(
            id="config.blog-form", severity="warning",
            title=f"{where}: `{erratum.wrong}` is the blog's form and {erratum.happens}; "
                  f"Theano {version} reads {erratum.correct}",
            evidence=(setting.evidence(),), fix=fix, source=erratum.source)
        return
    if removed is not None:
        instead = (f"; set {removed.replacement} instead" if removed.replacement else "")
        if setting.from_env:
            fix = env_fix
        else:
            fix = Fix(text=f"in {setting.origin}: delete `[{section}] {key}`{instead}",
                      actions=(ConfigEdit(path=setting.origin, op="comment-out",
                                            section=section, key=key,
                                            note=f"{name} was removed in Theano 1.0"),))
        yield Finding(
            id="config.removed-flag", severity="warning",
            title=f"{where}: {name} belongs to the GPU back-end removed in Theano 1.0; {ignored}",
            evidence=(setting.evidence(),), fix=fix, source=removed.source)
        return
    close = difflib.get_close_matches(name, sorted(rules.known_flags), n=1)
    yield Finding(
        id="config.unknown-flag", severity="warning",
        title=f"{where}: Theano {version} has no flag {name}; {ignored}",
        evidence=(setting.evidence(),),
        fix=Fix(text=f"remove it{f', or did you mean {close[0]}?' if close else ''}"),
        source=_reading("flags-unknown-key" if setting.from_env else "theanorc-unknown-key"))


def _overrides(found: list[Setting]) -> Iterator[Finding]:
    from_files: dict[str, Setting] = {}
    for setting in found:
        if setting.applied and not setting.from_env:
            from_files[setting.name] = setting
    for setting in found:
        if not (setting.applied and setting.from_env):
            continue
        in_file = from_files.get(setting.name)
        if in_file is not None and in_file.value != setting.value:
            yield Finding(
                id="config.env-overrides-file", severity="warning",
                title=f"THEANO_FLAGS sets {setting.name}={setting.value}, overriding "
                      f"{in_file.value} in {in_file.origin}",
                evidence=(setting.evidence(), in_file.evidence()),
                fix=Fix(text=f"make them agree, or drop {setting.raw_key} from THEANO_FLAGS"),
                source=_reading("precedence"))


def _cwd(facts: HostFacts) -> Iterator[Finding]:
    rc = theano_config(facts).ignored
    if rc is None:
        return
    files = [f.path for f in theano_config(facts).files] + [rc.path]
    yield Finding(
        id="config.cwd-theanorc-ignored", severity="warning",
        title=f"{rc.path} is in the current folder, where Theano never looks: its "
              f"{len(rc.flags)} setting(s) do not apply",
        evidence=(Evidence(kind="file", where=rc.path,
                           text=", ".join(f"{k}={v}" for k, v in rc.flags.items()) or "(empty)"),
                  Evidence(kind="env", where="THEANORC",
                           text=next((v for k, v in facts.environ.items()
                                      if k.upper() == "THEANORC"), "(unset)"))),
        fix=Fix(text=set_variable(facts.platform, "THEANORC",
                                  facts.target.pathsep.join(files))
                + "  (or move its settings into " + theano_config(facts).write_to + ")"),
        source=_reading("theanorc-cwd"))


def _preallocate(facts: HostFacts, rules: TheanoRules) -> Iterator[Finding]:
    eff = effective(facts, rules)
    setting = eff.get("gpuarray.preallocate")
    if setting is None:
        return
    try:
        fraction = float(setting.value)
    except ValueError:
        return
    device = eff["device"].value if "device" in eff else "cuda"
    number = re.fullmatch(r"cuda(\d*)", device)
    index = int(number[1]) if number and number[1] else 0
    gpu = next((g for g in facts.gpus if g.index == index), None)
    if not rules.preallocate or gpu is None or gpu.memory_total_mib is None or \
            gpu.memory_free_mib is None:
        return
    reading = rules.preallocate[0]
    wanted = reading.megabytes(fraction, gpu.memory_total_mib)
    if wanted <= gpu.memory_free_mib:
        return
    fits = math.floor(gpu.memory_free_mib / gpu.memory_total_mib * 0.9 * 100) / 100
    row = next(r for r in theano_knowledge().flags if r.name == "gpuarray.preallocate")
    probe = next(r for r in theano_knowledge().gpu_probe if r.id == "activated")
    yield Finding(
        id="config.preallocate-exceeds-free", severity="error",
        title=f"gpuarray.preallocate = {setting.value} asks for {wanted:.0f} MiB of GPU "
              f"{index} ({gpu.name}); {gpu.memory_free_mib} MiB are free: pygpu fails to "
              "start and Theano runs on the CPU",
        evidence=(setting.evidence(),
                  *((command_evidence(facts.gpu_query),) if facts.gpu_query else ())),
        fix=Fix(text=f"set [gpuarray] preallocate = {fits} (or free GPU memory)"
                if fits > 0 else "free GPU memory, or set [gpuarray] preallocate = 0"),
        source=f"{reading.source}; {row.source} ({row.note}); {probe.source}")

"""Doctor's rules about Keras 2.x on a host: installed releases in a known pitfall (h5py 3
next to Keras 2.3), and the back-end Keras will really pick (KERAS_BACKEND against
keras.json); ``observe`` reads keras.json for them in doctor's impure pass."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from envforge.doctor.facts import Expected, FrameworkConfig, HostFacts
from envforge.doctor.model import Evidence, Finding, Fix
from envforge.packs.keras.knowledge import config_row, keras_knowledge, part_aliases
from envforge.packs.pitfalls import exact_parts, fired, message
from envforge.platforms import PLATFORMS, Platform


def release_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    env = facts.env
    if env is None or not env.exists:
        return
    aliases = part_aliases()
    versions = {aliases.get(name, name): version for name, version in env.versions.items()}
    for row in fired(keras_knowledge().pitfalls, exact_parts(versions)):
        shown = {name: f"{name} {versions.get(name)}" for name in row.when}
        yield Finding(
            id=f"keras.{row.id}", severity="error", title=f"{env.prefix}: {message(row, shown)}",
            evidence=tuple(Evidence(kind="file", where=env.sources[name], text=shown[name])
                           for name in row.when if name in env.sources),
            fix=Fix(text=row.fix), source=row.source)


def observe(environ: Mapping[str, str], platform: Platform) -> FrameworkConfig:
    """keras.json where Keras 2.x looks (KERAS_HOME, else the home folder's .keras) and
    KERAS_BACKEND; nothing when neither is there (a host without Keras)."""
    from envforge.doctor.facts import ConfigFile, FrameworkConfig

    target = PLATFORMS[platform]
    backend = target.getenv(environ, "KERAS_BACKEND")
    keras_home = target.getenv(environ, "KERAS_HOME")
    home = target.getenv(environ, "HOME") or target.getenv(environ, "USERPROFILE")
    folder = keras_home or (str(target.pure_path(home) / ".keras") if home else None)
    path = None if folder is None else str(target.pure_path(folder) / "keras.json")
    if backend is None and (path is None or not Path(path).is_file()):
        return FrameworkConfig()
    files: tuple[ConfigFile, ...] = ()
    if path is not None:
        file = ConfigFile(path=path, exists=Path(path).is_file(), read=True)
        if file.exists:
            try:
                text = Path(path).read_text(encoding="utf-8")
                config = json.loads(text)
                if not isinstance(config, dict):
                    raise ValueError("not a JSON object")
                file = file.model_copy(update={"text": text, "flags": {
                    str(k): str(v) for k, v in config.items()}})
            except (OSError, ValueError) as exc:
                file = file.model_copy(update={"error": str(exc)})
        files = (file,)
    return FrameworkConfig(name="Keras", files=files, files_label="keras.json",
                           variable="KERAS_BACKEND", variable_value=backend)


def config_rules(facts: HostFacts, expected: Expected | None) -> Iterator[Finding]:
    """KERAS_BACKEND against keras.json's backend and the lock's; a keras.json Keras cannot
    read."""
    seen = facts.frameworks.get("keras")
    locked = expected.settings.get("keras", {}) if expected is not None else {}
    if locked.get("backend"):
        yield from _locked_backend(seen, locked["backend"])
    if seen is None or (not seen.files and seen.variable_value is None):
        return
    file = seen.files[0] if seen.files else None
    if file is not None and file.error:
        yield Finding(
            id="keras.json-unreadable", severity="warning",
            title=f"{file.path} is not a JSON object ({file.error}): Keras 2.x ignores it and "
                  "runs with its defaults (backend tensorflow, floatx float32)",
            evidence=(Evidence(kind="file", where=file.path, text=file.error),),
            fix=Fix(text=f"rewrite {file.path} as JSON, or remove it (Keras writes its "
                         "defaults)"),
            source=config_row("keras.json").source)
    variable = seen.variable_value
    written = file.flags.get("backend") if file is not None else None
    if file is not None and variable is not None and written is not None and variable != written:
        yield Finding(
            id="keras.backend-overridden", severity="warning",
            title=f"KERAS_BACKEND={variable} overrides {file.path}'s backend \"{written}\": "
                  f"Keras runs on {variable} (it prints \"Using {variable.capitalize()} "
                  "backend.\")",
            evidence=(Evidence(kind="env", where="KERAS_BACKEND", text=variable),
                      Evidence(kind="file", where=file.path, text=f'"backend": "{written}"')),
            fix=Fix(text=f"unset KERAS_BACKEND, or set keras.json's backend to \"{variable}\" "
                         "so both say the same"),
            source=config_row("KERAS_BACKEND").source)


def _locked_backend(seen: FrameworkConfig | None, wanted: str) -> Iterator[Finding]:
    """The back-end Keras will pick here (KERAS_BACKEND, else keras.json, else its default)
    against the lock's."""
    file = seen.files[0] if seen is not None and seen.files else None
    written = file.flags.get("backend") if file is not None and not file.error else None
    variable = seen.variable_value if seen is not None else None
    default = config_row("backends")
    found, why = ((variable, "KERAS_BACKEND") if variable else
                  (written, str(file.path)) if written and file is not None else
                  ("tensorflow", "Keras's default: no keras.json and no KERAS_BACKEND"))
    if found == wanted:
        return
    yield Finding(
        id="keras.backend-not-locked", severity="error",
        title=f"Keras will run on {found} ({why}); the lock says {wanted}",
        evidence=tuple(e for e in (
            Evidence(kind="env", where="KERAS_BACKEND", text=variable) if variable else None,
            Evidence(kind="file", where=file.path, text=f'"backend": "{written}"')
            if file is not None and written else None) if e is not None),
        fix=Fix(text=f"run it through `envforge run` (activation sets KERAS_HOME and "
                     f"KERAS_BACKEND={wanted}), or set KERAS_BACKEND={wanted}"),
        source=default.source)

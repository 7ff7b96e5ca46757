"""Reading a spec: TOML text into the models, one merged view per platform.

Any section but ``[project]`` may carry ``platform.<name>`` tables whose values
replace the general ones for that platform; ``packages`` lists are added to instead.
Each platform's merged view is validated on its own, and an error names the line of
the value that caused it, whether it sat in the general table or the platform one.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement
from pydantic import ValidationError

from envforge.errors import SpecError
from envforge.inputfile import SPEC_LIMIT, read_input_text
from envforge.packapi import Registry
from envforge.platforms import Platform
from envforge.spec.models import (
    CORE_KERNEL_NAMES,
    PLATFORMS,
    PlatformSpec,
    ProjectSection,
    Spec,
    SpecPack,
)
from envforge.tomlpos import KeyPath, key_lines, line_of

if TYPE_CHECKING:
    from collections.abc import Iterable
_PER_PLATFORM_SECTIONS = ("python", "environment", "conda", "pypi", "debian", "cuda", "cudnn",
                          "compiler", "verify", "path")


def load_spec(path: Path | str, registry: Registry[SpecPack]) -> Spec:
    """Read and validate a spec file; any problem is one SpecError naming file, line and key.
    ``registry``'s packs give the sections beside the core's."""
    path = Path(path)
    text = read_input_text(path, SPEC_LIMIT, missing="no such spec file")
    return parse_spec(text, source=str(path), registry=registry)


def parse_spec(text: str, *, source: str, registry: Registry[SpecPack]) -> Spec:
    """Validate spec text; ``source`` is the name errors use."""
    raw = load_toml(text, source)
    lines = key_lines(text)

    def fail(path: KeyPath, message: str) -> SpecError:
        return SpecError(source, message, line=line_of(lines, path),
                         key=".".join(str(p) for p in path) or None)

    if "project" not in raw and {"meta", "platforms"} <= set(raw):
        locked_from = raw["meta"].get("spec") if isinstance(raw["meta"], dict) else None
        named = f" ({locked_from})" if locked_from else ""
        raise fail(("meta",), "this is a lock (`envforge lock` wrote it), not a spec: give "
                   f"the spec it was locked from{named}: commands "
                   "take the spec and find its lock themselves")
    sections = (*_PER_PLATFORM_SECTIONS, *registry.names)
    unknown = sorted(set(raw) - {"project", *sections})
    if unknown:
        known = ", ".join(("project", *sections))
        raise fail((unknown[0],), f"unknown section (known: {known})")
    if "project" not in raw:
        raise fail((), "missing [project] section")
    project = _validate(ProjectSection, raw["project"], ("project",), {}, fail)
    if len(set(project.platforms)) != len(project.platforms):
        raise fail(("project", "platforms"), "a platform is listed twice")

    merged: dict[Platform, PlatformSpec] = {}
    packs = registry.mounted(raw)
    for platform in project.platforms:
        view, origin = _merge_platform(raw, platform, sections, fail)
        core = {name: view[name] for name in _PER_PLATFORM_SECTIONS if name in view}
        pack_sections = {pack.name: _validate(pack.section, view.get(pack.name, {}),
                                              (pack.name,), origin, fail) for pack in packs}
        merged[platform] = _validate(PlatformSpec, {"platform": platform, **core,
                                                    "packs": pack_sections}, (), origin, fail)
        _check_markers(merged[platform], origin, fail)
        _check_kernels(merged[platform], packs, origin, fail)
    # The hash covers what the user wrote (comments and layout aside), not envforge's defaults,
    # so a new optional key in a later envforge does not make every lock stale.
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Spec(source=source, project=project, platforms=merged, content_hash=f"sha256:{digest}",
                key_lines=lines)


_PYTHON_MARKERS = frozenset({"python_version", "python_full_version"})


def excluded_by_python_marker(text: str, version: str) -> bool:
    """Whether ``text``'s marker names only the Python and is false for ``version`` (3.N or
    3.N.N): such a line is never installed in that environment."""
    marker = Requirement(text).marker
    if marker is None or not _variables(marker._markers) <= _PYTHON_MARKERS:
        return False
    full = version if version.count(".") == 2 else ""
    if "python_full_version" in _variables(marker._markers) and not full:
        return False
    minor = ".".join(version.split(".")[:2])
    return not marker.evaluate({"python_version": minor, "python_full_version": full})


def _check_markers(pspec: PlatformSpec, origin: dict[KeyPath, KeyPath], fail: Any) -> None:
    """A ``[pypi] packages`` line whose marker names only the Python and is false for the
    environment's would be left out without a word: refused, with the fix."""
    version = pspec.python.version
    for index, text in enumerate(pspec.pypi.packages):
        if excluded_by_python_marker(text, version):
            raise fail(_origin_of(("pypi", "packages", str(index)), origin),
                       f"{text!r}: its marker excludes it on the environment's Python {version}, "
                       "so it would never be installed; fix: remove the line")


def kernel_names(packs: Iterable[SpecPack]) -> tuple[str, ...]:
    """The kernels a spec mounting ``packs`` may name: the core's (``CORE_KERNEL_NAMES``),
    then each pack's."""
    return (*CORE_KERNEL_NAMES, *(name for pack in packs for name in pack.kernels
                                  if name not in CORE_KERNEL_NAMES))


def _check_kernels(pspec: PlatformSpec, packs: Iterable[SpecPack],
                   origin: dict[KeyPath, KeyPath], fail: Any) -> None:
    """Each ``[verify] kernels`` name is the core's or a mounted pack's (Theano's scan)."""
    known = kernel_names(packs)
    for index, name in enumerate(pspec.verify.kernels):
        if name not in known:
            raise fail(_origin_of(("verify", "kernels", str(index)), origin),
                       f"unknown kernel {name!r} (the core's and the mounted packs': "
                       f"{', '.join(known)})")


def _variables(markers: Any) -> set[str]:
    """The marker variables named in packaging's parsed marker list."""
    found: set[str] = set()
    for item in markers:
        if isinstance(item, list):
            found |= _variables(item)
        elif isinstance(item, tuple):
            found |= {getattr(part, "value", "") for part in item
                      if type(part).__name__ == "Variable"}
    return found


def load_toml(text: str, source: str) -> dict[str, Any]:
    """tomllib's reading, with a syntax error or a document nested too deep as a SpecError."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_syntax_error(source, exc) from None
    except RecursionError:
        raise SpecError(source, "TOML nested too deeply to read") from None


def toml_syntax_error(source: str, exc: tomllib.TOMLDecodeError) -> SpecError:
    """tomllib puts the position in its message ("... (at line 9, column 8)")."""
    text = str(exc)
    match = re.search(r"\(at line (\d+), column \d+\)$", text)
    line = int(match.group(1)) if match else None
    reason = text[: match.start()].strip() if match else text
    return SpecError(source, f"TOML syntax error: {reason}", line=line)


def _merge_platform(raw: dict[str, Any], platform: str, sections: tuple[str, ...],
                    fail: Any) -> tuple[dict[str, Any], dict[KeyPath, KeyPath]]:
    """The sections as seen by one platform, and where each overridden key came from."""
    view: dict[str, Any] = {}
    origin: dict[KeyPath, KeyPath] = {}
    for section in sections:
        if section not in raw:
            continue
        body = raw[section]
        if not isinstance(body, dict):
            raise fail((section,), "must be a table")
        general = {k: v for k, v in body.items() if k != "platform"}
        overrides = body.get("platform", {})
        if not isinstance(overrides, dict):
            raise fail((section, "platform"), "must be a table of platform names")
        for name in overrides:
            if name not in PLATFORMS:
                raise fail((section, "platform", name),
                           f"unknown platform (known: {', '.join(PLATFORMS)})")
        extra = overrides.get(platform, {})
        if not isinstance(extra, dict):
            raise fail((section, "platform", platform), "must be a table")
        combined = dict(general)
        for key, value in extra.items():
            origin[(section, key)] = (section, "platform", platform, key)
            if key == "packages" and isinstance(value, list) and isinstance(general.get(key), list):
                combined[key] = [*general[key], *value]
                # each merged value's own line: the shared ones', then the platform's
                origin.update({(section, key, str(i)): (section, key, str(i))
                               for i in range(len(general[key]))})
                origin.update({(section, key, str(len(general[key]) + i)):
                               (section, "platform", platform, key, str(i))
                               for i in range(len(value))})
            else:
                combined[key] = value
        view[section] = combined
    return view, origin


def _origin_of(path: KeyPath, origin: dict[KeyPath, KeyPath]) -> KeyPath:
    """Where the merged view's ``path`` is written: its longest overridden prefix's place."""
    for length in range(len(path), 0, -1):
        if path[:length] in origin:
            return (*origin[path[:length]], *path[length:])
    return path


def _validate(model: type[Any], data: Any, prefix: KeyPath, origin: dict[KeyPath, KeyPath],
              fail: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(str(p) for p in error["loc"])
        path = _origin_of((*prefix, *loc), origin)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        elif error["type"] == "missing":
            message = "required key is missing"
        elif error["type"] in ("literal_error", "string_pattern_mismatch"):
            message = f"invalid value {error.get('input')!r}: {message}"
        elif error["type"] in ("int_type", "bool_type", "float_type"):  # strict: no coercion
            given = json.dumps(error.get("input"), default=str)
            message = f"invalid value {given}: {message} (a TOML value, not a string)"
        elif error["type"] == "value_error":
            message = str(error.get("ctx", {}).get("error", message))
        raise fail(path, message) from None

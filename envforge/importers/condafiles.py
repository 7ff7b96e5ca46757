"""environment.yml, ``@EXPLICIT`` files and ``conda list --export`` files, mapped to PyPI.

envforge's specs that lock on any host are venvs from PyPI, so conda names are mapped to
PyPI names (knowledge/legacy_names.toml) and native libraries are reported, not imported.
environment.yml is read as the small YAML subset conda writes (``key: value`` and ``- item``
lists, one ``pip:`` sub-list): no YAML library is needed, and anything else is reported.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from envforge.importers import Imported, Skipped
from envforge.importers.legacy_names import conda_to_pypi
from envforge.importers.pyfiles import add_requirement

_EXPORT_LINE = re.compile(r"^([A-Za-z0-9_.-]+)=([^=\s]+)=([^=\s]+)$")


def is_conda_list(text: str) -> bool:
    """An ``@EXPLICIT`` file or a ``conda list --export`` one (often named ``*.txt``)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "@EXPLICIT" in lines:
        return True
    body = [ln for ln in lines if not ln.startswith("#")]
    return bool(body) and all(_EXPORT_LINE.match(ln) for ln in body)


def read_conda_list(name: str, text: str) -> Imported:
    """Each ``name=version=build`` line, or each package URL after ``@EXPLICIT``."""
    out = Imported()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#") or line == "@EXPLICIT":
            continue
        match = _EXPORT_LINE.match(line)
        if match:
            package, version = match.group(1), match.group(2)
        else:
            filename = unquote(urlsplit(line.split("#", 1)[0]).path.rsplit("/", 1)[-1])
            stem = re.sub(r"\.(tar\.bz2|conda)$", "", filename)
            parts = stem.rsplit("-", 2)
            if len(parts) != 3 or stem == filename:
                out.skipped.append(Skipped(line, f"{name}:{number}", "not a conda package URL"))
                continue
            package, version = parts[0], parts[1]
        _conda_spec(package, f"=={version}", f"{name}:{number}", out)
    return out


def read_environment_yml(name: str, text: str) -> Imported:
    """``dependencies`` (conda specs, mapped) and its ``pip:`` list (taken as written)."""
    out = Imported()
    section = ""
    in_pip = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        origin = f"{name}:{number}"
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if indent == 0:
            section = stripped.split(":", 1)[0] if ":" in stripped else ""
            in_pip = False
            continue
        if section != "dependencies" or not stripped.startswith("-"):
            continue
        item = unquoted(stripped[1:].strip())
        if item.rstrip(":") == "pip" and item.endswith(":"):
            in_pip, pip_indent = True, indent
            continue
        if in_pip and indent > pip_indent:
            add_requirement(item, origin, out)
            continue
        in_pip = False
        conda_item(item, origin, out)
    return out


def unquoted(value: str) -> str:
    """A YAML scalar's or a shell word's value without its matching quotes."""
    return value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" else value


def conda_item(item: str, origin: str, out: Imported) -> None:
    """A conda match spec: ``name``, ``name=1.2``, ``name=1.2=build``, ``name>=1.2``,
    ``channel::name``."""
    item = item.split("::", 1)[-1].strip()
    match = re.match(r"^([A-Za-z0-9_.-]+)\s*(.*)$", item)
    if match is None:
        out.skipped.append(Skipped(item, origin, "not a conda package spec"))
        return
    package, rest = match.group(1), match.group(2).replace(" ", "")
    if rest.startswith("=") and not rest.startswith("=="):
        version = rest[1:].split("=", 1)[0]  # a build string after a second "=" is conda's
        rest = f"=={version}" if not version.endswith("*") else f"=={version.rstrip('.*')}.*"
        if version.count(".") == 1 and not version.endswith("*") and package != "python":
            rest = f"=={version}.*"  # conda's "=1.19" means any 1.19.x
    _conda_spec(package, rest, origin, out)


def _conda_spec(package: str, specifier: str, origin: str, out: Imported) -> None:
    if package == "python":
        out.python.append((specifier or "", origin))
        return
    pypi, reason = conda_to_pypi(package)
    if pypi is None:
        out.skipped.append(Skipped(f"{package}{specifier}", origin, reason))
        return
    before = len(out.requirements)
    add_requirement(f"{pypi}{specifier}", origin, out)
    if reason and len(out.requirements) > before:
        found = out.requirements[-1]
        out.requirements[-1] = type(found)(found.requirement, found.origin, reason)

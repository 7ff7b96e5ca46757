"""requirements*.txt, setup.py, setup.cfg, Pipfile and Pipfile.lock, read without running them."""

from __future__ import annotations

import ast
import configparser
import json
import posixpath
import re
import tomllib
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from envforge.confine import EscapeError
from envforge.importers import Found, Imported, Skipped, UnreadableError
from envforge.importers.legacy_names import pypi_mirror
from envforge.spec import url_problem
from envforge.tomlpos import key_lines, line_of

Reader = Callable[[str], str | None]  # relative path -> text, None when absent
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9_.-]+)")
_VCS = ("git+", "hg+", "svn+", "bzr+")


def read_requirements(name: str, text: str, read: Reader, *, seen: set[str] | None = None
                      ) -> Imported:
    """A pip requirements file, following ``-r`` includes relative to it, each file once:
    ``seen`` holds the files read so far (a diamond of includes is not read 2^N times).
    ``read`` raises EscapeError for a file outside the repository: refused with this line."""
    seen = set() if seen is None else seen
    seen.add(name)
    out = Imported()
    for number, line in logical_lines(text):
        origin = f"{name}:{number}"
        words = line.split()
        option = words[0]
        if option in ("-r", "--requirement", "-c", "--constraint") and len(words) > 1:
            if option in ("-c", "--constraint"):
                out.skipped.append(Skipped(line, origin, "a constraints file: not imported"))
                continue
            target = _include(name, words[1])
            if target in seen:  # read already: its requirements are in once
                continue
            try:
                included = read(target)
            except EscapeError as exc:
                raise UnreadableError(name, f"{option} {words[1]}: {exc}; init reads only inside "
                                 "the repository", line=number) from None
            if included is None:
                out.skipped.append(Skipped(line, origin, f"{target} does not exist"))
            else:
                out.extend(read_requirements(target, included, read, seen=seen))
        elif option in ("-i", "--index-url") and len(words) > 1:
            add_index(words[1], line, origin, out)
        elif option.startswith("--index-url="):
            add_index(option.split("=", 1)[1], line, origin, out)
        elif (where := _source_option(option, words)) is not None:
            add_source(where[0], where[1], line, origin, out)
        elif option in ("-e", "--editable"):
            out.skipped.append(Skipped(line, origin, _editable_reason(words[1:])))
        elif option.startswith("-"):
            out.skipped.append(Skipped(line, origin, f"pip option {option}: not imported"))
        else:
            add_requirement(line.split(" --hash", 1)[0].strip(), origin, out)
    out.commented += commented_requirements(name, text)
    return out


_COMMENTED = re.compile(r"^\s*#\s*([A-Za-z0-9][A-Za-z0-9._-]*\s*(?:[=<>!~]=?[^#\s]+)?)\s*$")


def commented_requirements(name: str, text: str) -> list[Found]:
    """The lines that comment out one requirement and nothing else (``# mxnet``,
    ``#torch==0.4.1``): prose comments rarely parse so, and only those whose module the
    code imports are ever reported."""
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        match = _COMMENTED.match(raw)
        if match is None:
            continue
        try:
            requirement = Requirement(match[1])
        except InvalidRequirement:
            continue
        found.append(Found(str(requirement), f"{name}:{number}"))
    return found


def add_index(url: str, written: str, origin: str, out: Imported) -> None:
    """pip's ``-i``: an index that serves PyPI's releases (a public mirror near its authors,
    ``[[pypi_mirror]]``) is reported and the spec resolves from PyPI itself, which this host
    and a reader of the spec can reach; so is what is no http(s) URL (a local folder, a
    malformed one); any other is the spec's index."""
    if not _http_url(url):
        out.skipped.append(Skipped(written, origin, "not an http(s) URL of an index: the spec "
                                   "resolves from PyPI; give [pypi] index if the project "
                                   "needs another"))
        return
    mirror = pypi_mirror(url)
    if mirror is None:
        out.index.append((url, origin))
    else:
        out.skipped.append(Skipped(written, origin, f"an index that serves PyPI's releases "
                                   f"({mirror.name}; knowledge/legacy_names.toml): the spec "
                                   "resolves from PyPI itself"))


def add_source(kind: str, url: str, written: str, origin: str, out: Imported) -> None:
    """pip's ``-f`` (``kind`` find_links) or ``--extra-index-url`` (extra_indexes): an http(s)
    URL is the spec's; a local folder or what does not parse as a URL is reported."""
    if not re.match(r"^https?://", url):
        out.skipped.append(Skipped(written, origin, "a local folder: give its absolute path "
                                   f"in [pypi] {kind} if the project needs it"))
    elif not _http_url(url):
        out.skipped.append(Skipped(written, origin, "not an http(s) URL: not imported"))
    else:
        getattr(out, kind).append((url, origin))


def _http_url(url: str) -> bool:
    """An http(s) URL the spec will take (``url_problem``, the spec's own check)."""
    return re.match(r"^https?://", url) is not None and url_problem(url) is None


def _source_option(option: str, words: list[str]) -> tuple[str, str] | None:
    """``("find_links" | "extra_indexes", URL)`` for pip's ``-f``/``--find-links`` and
    ``--extra-index-url`` (PyTorch's ``-f https://download.pytorch.org/whl/torch_stable.html``
    for its ``+cpu`` and ``+cu101`` builds), else None."""
    for kind, names in (("find_links", ("-f", "--find-links")),
                        ("extra_indexes", ("--extra-index-url",))):
        if option in names and len(words) > 1:
            return kind, words[1]
        for name in names:
            if name.startswith("--") and option.startswith(f"{name}="):
                return kind, option.split("=", 1)[1]
    return None


def _include(name: str, raw: str) -> str:
    """An include's path relative to the repository, normalized (``sub/../r.txt`` is
    ``r.txt``); an absolute or escaping one is kept for the reader to refuse."""
    raw = raw.replace("\\", "/")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        return raw
    return posixpath.normpath(posixpath.join(posixpath.dirname(name), raw))


def _editable_reason(rest: list[str]) -> str:
    target = rest[0] if rest else ""
    if target in (".", "./") or not target:
        return "the repository itself (editable): not a dependency"
    return "an editable install: not locked; give it as a git or local source"


def add_requirement(text: str, origin: str, out: Imported) -> None:
    """One requirement line or list item: PEP 508, a bare VCS/archive URL, or unusable."""
    if text.startswith(_VCS) or re.match(r"^[a-z]+://", text):
        egg = _EGG.search(text)
        name = re.split(r"==|-\d", egg.group(1))[0] if egg else None
        url = re.sub(r"[#&]egg=[^&]*", "", text).rstrip("#&")
        if text.startswith("git+") and name:  # pip's legacy spelling of a git dependency
            url, note = _git_url(url)
            out.requirements.append(Found(f"{name} @ {url}", origin,
                                          note or "a git dependency, locked by its commit"))
            return
        name = name or _archive_name(url)
        if name and not text.startswith(_VCS) and _is_archive(url):
            out.requirements.append(Found(f"{name} @ {url}", origin, _URL_NOTE))
            return
        out.skipped.append(Skipped(text, origin, f"{name or text} from a URL ({_kind(text)}): "
                                   "only git URLs and wheel or sdist archives are locked; pin a "
                                   "release from the index if one will do"))
        return
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        out.skipped.append(Skipped(text, origin, f"not a requirement: {exc}"))
        return
    url = requirement.url or ""
    if canonicalize_name(requirement.name) == "python" and not url:
        # a conda name in a pip file (its `python==3.6.12` line is the interpreter): PyPI has
        # no project python (https://pypi.org/simple/python/ answers 404)
        out.python.append((str(requirement.specifier), origin))
        out.skipped.append(Skipped(text, origin, "the interpreter, not a distribution (PyPI "
                                   "has no project python): [python] version takes it"))
        return
    if url.startswith("git+"):
        requirement.url, note = _git_url(url)
        out.requirements.append(Found(str(requirement), origin, note))
        return
    if url and not url.startswith("file:"):
        if not _is_archive(url):
            out.skipped.append(Skipped(text, origin, f"{requirement.name} from a URL "
                                       f"({_kind(url)}): only git URLs, local files and wheel "
                                       "or sdist archives are locked"))
            return
        out.requirements.append(Found(str(requirement), origin, _URL_NOTE))
        return
    out.requirements.append(Found(str(requirement), origin))


_URL_NOTE = "a direct URL, locked by the sha256 of what it serves (as pip's --hash)"


def _git_url(url: str) -> tuple[str, str]:
    """``git+git://`` (the unauthenticated protocol GitHub turned off in 2022) becomes
    ``git+https://`` with a note; other URLs are kept."""
    if url.startswith("git+git://"):
        return "git+https://" + url.removeprefix("git+git://"), (
            f"was {url}: the git:// protocol is no longer served by GitHub (2022-03-15); "
            "https:// serves the same repository (GitHub blog, \"Improving Git protocol "
            "security on GitHub\")")
    return url, ""


def _is_archive(url: str) -> bool:
    return urlsplit(url).path.endswith(_ARCHIVES)


_ARCHIVES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")


def _archive_name(url: str) -> str | None:
    """The project a wheel or sdist URL serves, from its file name; None for anything else."""
    release = archive_release(url)
    return release[0] if release is not None else None


def archive_release(url: str) -> tuple[str, str] | None:
    """(project, version) of the wheel or sdist a URL serves, from its file name
    (``torch-1.4.0%2Bcpu-cp36-cp36m-win_amd64.whl``: torch, 1.4.0+cpu); None for anything
    else."""
    filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    try:
        if filename.endswith(".whl"):
            name, version = parse_wheel_filename(filename)[:2]
            return str(name), str(version)
        if filename.endswith(_ARCHIVES):
            stem = re.sub(r"\.(tar\.gz|zip|tar\.bz2|tgz)$", "", filename)
            if "-" not in stem:
                return None
            name, version = parse_sdist_filename(stem + ".tar.gz")
            return str(name), str(version)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return None


def _kind(url: str) -> str:
    return "git" if url.startswith("git+") or ".git" in url else "archive"


def logical_lines(text: str, *, dockerfile: bool = False) -> list[tuple[int, str]]:
    """Non-empty lines without comments, backslash continuations joined, first line's number.
    pip joins a continued line before it strips comments (a comment line ends it); Docker
    drops comment lines first (one inside a continued RUN does not end it), and a shell's
    comment within a line is left to the shell's own words."""
    lines: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if dockerfile and raw.lstrip().startswith("#"):
            continue
        line = raw.rstrip() if dockerfile else re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            lines.append((start, line))
    return lines


def read_setup_py(name: str, text: str) -> Imported:
    """``setup(install_requires=..., python_requires=...)`` from literals in the module: the
    file is parsed, never run; anything computed is reported, not guessed."""
    try:
        return _read_setup_py(name, text)
    except (RecursionError, MemoryError):  # a 20,000-term expression: CPython's parser gives up
        raise UnreadableError(name, "nested too deeply to parse") from None


def _read_setup_py(name: str, text: str) -> Imported:
    out = Imported()
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        out.skipped.append(Skipped(name, f"{name}:{exc.lineno}", f"cannot parse: {exc.msg}"))
        return out
    assigned: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_setup(n.func)]
    if not calls:
        out.skipped.append(Skipped(name, name, "no setup() call found"))
    for call in calls:
        for keyword in _keywords(name, call.keywords, assigned, out):
            if keyword.arg == "extras_require":
                _read_extras(name, keyword.value, assigned, out)
                continue
            if keyword.arg == "tests_require":
                _read_tests_require(name, keyword.value, assigned, out)
                continue
            if keyword.arg == "ext_modules":
                out.extensions += _extensions(name, keyword.value, assigned)
                continue
            if keyword.arg not in ("install_requires", "python_requires"):
                continue
            value = keyword.value
            if isinstance(value, ast.Name) and value.id in assigned:
                value = assigned[value.id]
            origin = f"{name}:{value.lineno}"
            try:
                literal = ast.literal_eval(value)
            except ValueError:
                out.skipped.append(Skipped(f"{keyword.arg}={ast.unparse(keyword.value)}",
                                           f"{name}:{keyword.value.lineno}",
                                           "computed at run time: setup.py is not executed"))
                continue
            if keyword.arg == "python_requires" and isinstance(literal, str):
                out.python.append((literal, origin))
            elif isinstance(literal, (list, tuple)):
                for item, element in zip(literal, _elements(value), strict=False):
                    add_requirement(str(item), f"{name}:{element.lineno}", out)
            elif isinstance(literal, str):
                for offset, line in enumerate(literal.splitlines()):
                    if line.strip():
                        add_requirement(line.strip(), f"{name}:{value.lineno + offset}", out)
    return out


def _extensions(name: str, value: ast.expr,
                assigned: dict[str, ast.expr]) -> list[tuple[str, str]]:
    """``ext_modules=[Extension("pkg.mod", [...]), ...]`` (or a name assigned such a list,
    or ``cythonize([...])`` of one): each extension's module with the line naming it; a
    module computed at run time counts by its line alone."""
    if isinstance(value, ast.Name) and value.id in assigned:
        value = assigned[value.id]
    if isinstance(value, ast.Constant) and value.value is None:  # ext_modules=None: none
        return []
    if isinstance(value, ast.Call) and value.args:  # cythonize(extensions, ...)
        return _extensions(name, value.args[0], assigned)
    found = []
    for element in _elements(value) if isinstance(value, (ast.List, ast.Tuple)) else [value]:
        module = None
        if isinstance(element, ast.Call):
            first = element.args[0] if element.args else next(
                (k.value for k in element.keywords if k.arg == "name"), None)
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                module = first.value
        found.append((module or "an extension", f"{name}:{element.lineno}"))
    return found


def _keywords(name: str, keywords: list[ast.keyword], assigned: dict[str, ast.expr],
              out: Imported) -> list[ast.keyword]:
    """A call's keywords, ``**X`` ones expanded where X is (a name assigned) a ``dict(...)``
    call or a dict literal with string keys (pytorch/text's ``setup(**setup_info)``, where
    ``setup_info = dict(install_requires=[...], ...)``); another ``**`` is reported."""
    found: list[ast.keyword] = []
    for keyword in keywords:
        if keyword.arg is not None:
            found.append(keyword)
            continue
        value = keyword.value
        if isinstance(value, ast.Name) and value.id in assigned:
            value = assigned[value.id]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and value.func.id == "dict" and not value.args:
            found += _keywords(name, value.keywords, assigned, out)
        elif isinstance(value, ast.Dict) and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
            found += [ast.keyword(arg=k.value, value=v)  # type: ignore[union-attr]
                      for k, v in zip(value.keys, value.values, strict=True)]
        else:
            out.skipped.append(Skipped(f"**{ast.unparse(keyword.value)}",
                                       f"{name}:{keyword.value.lineno}",
                                       "computed at run time: setup.py is not executed"))
    return found


def _read_extras(name: str, value: ast.expr, assigned: dict[str, ast.expr],
                 out: Imported) -> None:
    """``extras_require={"gym": ["gym"], ...}`` (a literal, or a name assigned one): each
    requirement into ``out.extras`` noted with its extra; a computed one is passed over."""
    if isinstance(value, ast.Name) and value.id in assigned:
        value = assigned[value.id]
    if not isinstance(value, ast.Dict):
        return
    for key, items in zip(value.keys, value.values, strict=True):
        if isinstance(items, ast.Name) and items.id in assigned:
            items = assigned[items.id]
        try:
            extra = ast.literal_eval(key) if key is not None else None
            literal = ast.literal_eval(items)
        except ValueError:
            continue
        texts = [literal] if isinstance(literal, str) else literal
        if not isinstance(extra, str) or not isinstance(texts, (list, tuple)):
            continue
        elements = _elements(items) or [items] * len(texts)
        for text, element in zip(texts, elements, strict=False):
            _add_extra(str(text), f"{name}:{element.lineno}", extra, out)


def _read_tests_require(name: str, value: ast.expr, assigned: dict[str, ast.expr],
                        out: Imported) -> None:
    """``tests_require=[...]`` (setuptools' keyword for what the tests need, a literal or a
    name assigned one): optional as an extra is, the code's imports deciding (google/dopamine's
    tests import mock, its tests_require's)."""
    if isinstance(value, ast.Name) and value.id in assigned:
        value = assigned[value.id]
    try:
        literal = ast.literal_eval(value)
    except ValueError:
        return
    if isinstance(literal, (list, tuple)):
        elements = _elements(value) or [value] * len(literal)
        for text, element in zip(literal, elements, strict=False):
            _add_extra(str(text), f"{name}:{element.lineno}", TESTS_REQUIRE, out)


TESTS_REQUIRE = "tests_require"
# The extras that name what a project's tests need: setuptools' ``tests_require`` ("packages
# required for testing", setuptools' keywords reference) and the extras named for it
# (keras's ``[tests]``, baselines' ``[test]``, Lasagne's ``[testing]``, installed by
# ``pip install -e .[test]``).
TEST_EXTRAS = frozenset({TESTS_REQUIRE, "test", "tests", "testing"})


def extra_of(found: Found) -> str:
    """The extra an ``Imported.extras`` entry came from (``test``, or ``tests_require``)."""
    label = found.note.split(";", 1)[0]
    return label.removeprefix("extra [").removesuffix("]")


def _add_extra(text: str, origin: str, extra: str, out: Imported) -> None:
    """One optional requirement, mapped as a requirement is, into ``out.extras``."""
    found = Imported()
    add_requirement(text, origin, found)
    label = extra if extra == TESTS_REQUIRE else f"extra [{extra}]"
    out.extras += [Found(f.requirement, f.origin, "; ".join(
        n for n in (label, f.note) if n), True) for f in found.requirements]


def _is_setup(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "setup") or \
        (isinstance(func, ast.Attribute) and func.attr == "setup")


def _elements(node: ast.expr) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, (ast.List, ast.Tuple)) else []


def read_setup_cfg(name: str, text: str) -> Imported:
    """``[options] install_requires`` and ``python_requires``."""
    out = Imported()
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        out.skipped.append(Skipped(name, name, f"cannot parse: {exc.message}"))
        return out
    if not parser.has_section("options"):
        return out
    options = parser["options"]
    if "python_requires" in options:
        out.python.append((options["python_requires"].strip(),
                           f"{name}:{_line(text, 'python_requires')}"))
    for item in options.get("install_requires", "").splitlines():
        item = item.split("#", 1)[0].strip()
        if item:
            add_requirement(item, f"{name}:{_line(text, item)}", out)
    for item in options.get("tests_require", "").splitlines():
        item = item.split("#", 1)[0].strip()
        if item:
            _add_extra(item, f"{name}:{_line(text, item)}", TESTS_REQUIRE, out)
    if parser.has_section("options.extras_require"):
        for extra, value in parser["options.extras_require"].items():
            for item in value.splitlines():
                item = item.split("#", 1)[0].strip()
                if not item:
                    continue
                _add_extra(item, f"{name}:{_line(text, item)}", extra, out)
    return out


def read_pipfile(name: str, text: str) -> Imported:
    """``[packages]`` (``*``, a specifier, or a table with ``version``/``git``) and
    ``[requires] python_version``."""
    out = Imported()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        out.skipped.append(Skipped(name, name, f"cannot parse: {exc}"))
        return out
    except RecursionError:
        raise UnreadableError(name, "nested too deeply to parse") from None
    lines = key_lines(text)

    def line(*path: str) -> int:
        return line_of(lines, path) or 1

    packages = _table(data, "packages", name, line("packages"))
    for package, value in packages.items():
        origin = f"{name}:{line('packages', package)}"
        if isinstance(value, dict):
            if "git" in value:
                add_requirement(_git_requirement(package, value, name,
                                                 line("packages", package)), origin, out)
                continue
            if any(k in value for k in ("path", "file", "editable")):
                out.skipped.append(Skipped(package, origin, "a git or path source: not locked "
                                           "by init yet"))
                continue
            value = value.get("version", "*")
        if not isinstance(value, str):
            raise UnreadableError(name, f"packages.{package}: {_kind_of(value)}, not a version "
                             "string or a table", line=line("packages", package))
        add_requirement(package if value in ("*", "") else f"{package}{value}", origin, out)
    requires = _table(data, "requires", name, line("requires"))
    for key in ("python_full_version", "python_version"):
        if key in requires:
            number = line("requires", key)
            python = _string(requires[key], f"requires.{key}", name, number)
            out.python.append((f"=={python}", f"{name}:{number}"))
            break
    return out


def read_pipfile_lock(name: str, text: str) -> Imported:
    """The ``default`` section's exact versions (the ``develop`` one is development only)."""
    out = Imported()
    try:
        data = json.loads(text)
    except ValueError as exc:
        out.skipped.append(Skipped(name, name, f"cannot parse: {exc}"))
        return out
    except RecursionError:
        raise UnreadableError(name, "nested too deeply to parse") from None
    if not isinstance(data, dict):
        raise UnreadableError(name, f"{_kind_of(data)}, not a JSON object as Pipenv writes")
    for package, entry in sorted(_table(data, "default", name, _line(text, '"default"')).items()):
        number = _line(text, json.dumps(package) + ":")
        origin = f"{name}:{number}"
        if not isinstance(entry, dict):
            raise UnreadableError(name, f"default.{package}: {_kind_of(entry)}, not an object",
                             line=number)
        if "git" in entry:
            add_requirement(_git_requirement(package, entry, name, number), origin, out)
        elif "version" in entry:
            version = _string(entry["version"], f"default.{package}.version", name, number)
            markers = entry.get("markers")
            if markers is not None:
                markers = _string(markers, f"default.{package}.markers", name, number)
            add_requirement(f"{package}{version}" + (f"; {markers}" if markers else ""),
                            origin, out)
        else:
            out.skipped.append(Skipped(package, origin, "a git or path source: not locked by "
                                       "init yet"))
    meta = _table(data, "_meta", name, _line(text, '"_meta"'))
    requires = _table(meta, "requires", name, _line(text, '"requires"'), at="_meta.")
    python = requires.get("python_version")
    if python:
        number = _line(text, "python_version")
        out.python.append((f"=={_string(python, '_meta.requires.python_version', name, number)}",
                           f"{name}:{number}"))
    return out


def _table(data: dict[str, Any], key: str, name: str, line: int, *, at: str = ""
           ) -> dict[str, Any]:
    """``data[key]`` when it is a table (absent: empty), else UnreadableError naming the key."""
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise UnreadableError(name, f"{at}{key}: {_kind_of(value)}, not a table", line=line)
    return value


def _string(value: Any, key: str, name: str, line: int) -> str:
    if not isinstance(value, str):
        raise UnreadableError(name, f"{key}: {_kind_of(value)}, not a string", line=line)
    return value


def _kind_of(value: Any) -> str:
    kinds = {dict: "a table", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def _git_requirement(package: str, entry: dict[str, Any], name: str, line: int) -> str:
    """Pipenv's ``{git = URL, ref = REV}`` as PEP 508: ``name @ git+URL@REV``."""
    url = _string(entry["git"], f"{package}.git", name, line)
    url = url if url.startswith("git+") else f"git+{url}"
    ref = entry.get("ref")
    if ref is not None:
        ref = _string(ref, f"{package}.ref", name, line)
    return f"{package} @ {url}@{ref}" if ref else f"{package} @ {url}"


def _line(text: str, needle: str) -> int:
    """The first line holding ``needle`` (1 when none does)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return 1

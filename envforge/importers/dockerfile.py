"""A Dockerfile's ``pip install`` commands as requirements: what a repository's image
installed is what its authors ran (``RUN pip install tensorflow-gpu==1.12 keras==2.2.4``),
often its only record of the framework's release. Read, never built or run.

Each ``RUN`` instruction (shell form, ``\\`` continuations joined; exec form's JSON array) is
split into commands at ``&&``, ``||``, ``;`` and ``|``; a command that runs pip (``pip``,
``pip3``, ``pip3.6``, ``python -m pip``, after ``sudo`` or variable assignments) to
``install`` gives each argument that is no option as a requirement, its ``-f`` and
``--extra-index-url`` as the requirements files' are (its ``-i`` is reported: a mirror). A
``FROM`` image that holds a framework gives its release
(``tensorflow/tensorflow:1.8.0-gpu-py3``: ``[[docker_image]]`` rows). The Dockerfile
reference: https://docs.docker.com/reference/dockerfile/#run; pip's options:
https://pip.pypa.io/en/stable/cli/pip_install/.
"""

from __future__ import annotations

import json
import re
import shlex

from envforge.importers import Found, Imported, Skipped
from envforge.importers.legacy_names import legacy_names
from envforge.importers.pyfiles import add_requirement, logical_lines

# pip install's options that take a value (the value is no requirement)
_VALUED = frozenset({
    "-c", "--constraint", "-t", "--target", "--prefix", "--root", "--src", "--cache-dir",
    "--trusted-host", "--timeout", "--retries", "--progress-bar", "--python-version",
    "--platform", "--implementation", "--abi", "--upgrade-strategy", "--log", "--proxy",
    "--exists-action", "--cert", "--client-cert", "--global-option", "--install-option",
    "--config-settings", "-C", "--report", "--only-binary", "--no-binary", "--root-user-action",
})
_SOURCES = {"-f": "find_links", "--find-links": "find_links",
            "--extra-index-url": "extra_indexes"}
# an image's own index is most often a mirror of PyPI near its builder (mirrors.aliyun.com,
# pypi.tuna.tsinghua.edu.cn): reported, the spec's index staying PyPI's
_INDEX = ("-i", "--index-url")
_PIP = re.compile(r"^pip(?:\d+(?:\.\d+)?)?$")
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")


def read_dockerfile(name: str, text: str) -> Imported:
    """The requirements the Dockerfile's ``RUN pip install`` commands name, each from its
    instruction's first line; what cannot be a requirement (a build variable, the
    repository itself, a requirements file it copies in) is reported or left to the files
    init reads as such."""
    out = Imported()
    for number, instruction in logical_lines(text, dockerfile=True):
        keyword, _, rest = instruction.partition(" ")
        if keyword.upper() == "FROM":
            _read_image(rest.split(), f"{name}:{number}", out)
        if keyword.upper() == "RUN":
            read_pip_commands(rest.strip(), f"{name}:{number}", out)
    return out


def read_pip_commands(shell: str, origin: str, out: Imported) -> None:
    """The requirements the ``pip install`` commands of a shell line name (a Dockerfile's
    RUN, a notebook's ``!pip install``), into ``out`` from ``origin``."""
    for command in _commands(shell):
        args = _pip_install_args(command)
        if args is not None:
            _read_args(args, origin, out)


def _read_image(words: list[str], origin: str, out: Imported) -> None:
    """The framework release a base image's tag names (``[[docker_image]]`` rows:
    ``tensorflow/tensorflow:1.8.0-gpu-py3`` holds tensorflow-gpu 1.8.0)."""
    words = [w for w in words if not w.startswith("--")]  # --platform=...
    if not words:
        return
    image, _, tag = words[0].removeprefix("docker.io/").partition(":")
    for row in legacy_names().docker_image:
        match = re.match(row.tag, tag) if row.image == image else None
        if match is not None:
            out.requirements.append(Found(
                row.requirement.format(version=match["version"]), origin,
                f"the base image {words[0]} holds it (knowledge/legacy_names.toml)"))
            return


def _commands(rest: str) -> list[list[str]]:
    """A RUN's commands, each as its words; an exec form's array is one command."""
    if rest.startswith("["):
        try:
            array = json.loads(rest)
        except ValueError:
            return []
        return [[str(word) for word in array]] if isinstance(array, list) else []
    commands = []
    for part in re.split(r"&&|\|\||;|\|", rest):
        try:  # a shell comment starts a word (``#egg=`` inside a URL is none)
            words = shlex.split(re.sub(r"(^|\s)#.*$", "", part))
        except ValueError:  # an unbalanced quote: not read
            continue
        if words:
            commands.append(words)
    return commands


def _pip_install_args(words: list[str]) -> list[str] | None:
    """The arguments after ``install`` of a pip command; None for any other command."""
    while words and (words[0] == "sudo" or re.match(r"^\w+=", words[0])):
        words = words[1:]
        while words and words[0].startswith("-"):  # sudo's options (-H; -u USER)
            words = words[2:] if words[0] in ("-u", "-g") else words[1:]
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if _PYTHON.match(program) and words[1:3] == ["-m", "pip"]:
        words = words[3:]
    elif _PIP.match(program):
        words = words[1:]
    else:
        return None
    while words and words[0].startswith("-"):  # pip's own options before the command
        words = words[1:]
    return words[1:] if words and words[0] == "install" else None


def _read_args(args: list[str], origin: str, out: Imported) -> None:
    at = 0
    while at < len(args):
        word = args[at]
        option, equals, value = word.partition("=")
        if word in _SOURCES or (equals and option in _SOURCES):
            if not equals:
                at += 1
                value = args[at] if at < len(args) else ""
            if value and "$" not in value:
                getattr(out, _SOURCES[option if equals else word]).append((value, origin))
        elif word in _INDEX or (equals and option in _INDEX):
            if not equals:
                at += 1
                value = args[at] if at < len(args) else ""
            out.skipped.append(Skipped(f"{option if equals else word} {value}", origin,
                                       "the image's index (a PyPI mirror, as a rule): the "
                                       "spec resolves from PyPI; set [pypi] index if not"))
        elif word in ("-r", "--requirement", "-e", "--editable") or word in _VALUED:
            at += 1  # a requirements file (read as such where init reads it), a value
            if word in ("-e", "--editable") and at < len(args):
                out.skipped.append(Skipped(f"{word} {args[at]}", origin,
                                           "an editable install: not locked"))
        elif word.startswith("-"):
            pass  # a flag (--upgrade, --no-cache-dir) or --option=value
        elif "$" in word:
            out.skipped.append(Skipped(word, origin, "a build variable's value: not known "
                                       "without the build"))
        elif word in (".", "./") or word.startswith(("/", "./", "../")):
            out.skipped.append(Skipped(word, origin, "a path in the image (the repository "
                                       "itself, or a file it copies in): not a dependency"))
        elif _installer(word):
            out.skipped.append(Skipped(word, origin, "the installer's own tools, upgraded in "
                                       "the image: the environment brings its own"))
        else:
            add_requirement(word, origin, out)
        at += 1


def _installer(word: str) -> bool:
    """``pip``, and ``setuptools`` or ``wheel`` unpinned (``pip install -U pip setuptools
    wheel``, the first line of many images); a pinned setuptools stays."""
    name = re.split(r"[<>=!~\[;\s]", word, maxsplit=1)[0].lower()
    return name == "pip" or (name in ("setuptools", "wheel") and name == word.lower())

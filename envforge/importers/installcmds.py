"""The install commands of shell lines as requirements: what a repository's authors ran to
build its environment (a Dockerfile's ``RUN pip install tensorflow-gpu==1.12``, an
``install.sh``'s ``conda create -n env python=3.6`` then ``pip install -r ...``, a
notebook's ``!pip install``), often its only record of the framework's release or its
Python. Read, never run.

A line is split into commands at ``&&``, ``||``, ``;`` and ``|`` (an exec form's JSON array
is one command). A command that runs pip (``pip``, ``pip3``, ``pip3.6``, ``python -m pip``,
after ``sudo`` or variable assignments) to ``install`` gives each argument that is no option
as a requirement, its ``-f`` and ``--extra-index-url`` as a requirements file's are, its
``-i`` as a requirements file's (``pyfiles.add_index``); one that runs conda or mamba to
``install`` or ``create`` gives each package spec as an environment file's dependency is
read (conda's name mapped; ``python=3.6`` the Python). pip's options:
https://pip.pypa.io/en/stable/cli/pip_install/; conda's:
https://docs.conda.io/projects/conda/en/stable/commands/install.html.
"""

from __future__ import annotations

import json
import re
import shlex

from envforge.importers import Imported, Skipped
from envforge.importers.condafiles import conda_item, unquoted
from envforge.importers.pyfiles import add_index, add_requirement, add_source, logical_lines

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
_INDEX = ("-i", "--index-url")
_PIP = re.compile(r"^pip(?:\d+(?:\.\d+)?)?$")
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
_CONDA = ("conda", "mamba", "micromamba")
# conda install's and create's options that take a value
_CONDA_VALUED = frozenset({
    "-c", "--channel", "-n", "--name", "-p", "--prefix", "--file", "--repodata-fn",
    "--solver", "--platform", "--subdir", "--clone",
})


def read_shell_script(name: str, text: str) -> Imported:
    """A shell script's install commands (``install.sh``, ``requirements.sh``), each from
    its line (continuations joined, comment lines dropped), the script's own variables
    expanded (``TF_VERSION=1.11.0`` then ``pip install tensorflow-gpu==${TF_VERSION}``)."""
    out = Imported()
    variables: dict[str, str] = {}
    for number, line in logical_lines(text, dockerfile=True):
        assigned = _ASSIGNMENT.match(line)
        if assigned is not None:
            variables[assigned["name"]] = expand(unquoted(assigned["value"]), variables)
        else:
            read_install_commands(expand(line, variables), f"{name}:{number}", out)
    return out


# a line that only sets a variable: ``TF_VERSION=1.11.0``, ``export CUDA="9.0"`` (a command
# substitution's value is not known without running it)
_ASSIGNMENT = re.compile(r"^(?:export\s+)?(?P<name>[A-Za-z_]\w*)=(?P<value>\"[^\"$`]*\"|'[^']*'|"
                         r"[^\s;&|$`'\"]*)$")
_REFERENCE = re.compile(r"\$\{(?P<braced>[A-Za-z_]\w*)(?::?-(?P<default>[^}]*))?\}|"
                        r"\$(?P<bare>[A-Za-z_]\w*)")


def expand(text: str, variables: dict[str, str]) -> str:
    """``$NAME``, ``${NAME}`` and ``${NAME:-default}`` replaced where the value is known (set
    before, or the default); any other reference left, to be reported as not known."""

    def value(match: re.Match[str]) -> str:
        name = match["braced"] or match["bare"]
        if name in variables:
            return variables[name]
        return match["default"] if match["default"] is not None else match[0]

    return _REFERENCE.sub(value, text)


def read_install_commands(shell: str, origin: str, out: Imported) -> None:
    """The requirements the ``pip install`` and ``conda install``/``create`` commands of a
    shell line name, into ``out`` from ``origin``."""
    for command in _commands(shell):
        words = _without_prefix(command)
        args = _pip_install_args(words)
        if args is not None:
            _read_pip_args(args, origin, out)
            continue
        args = _conda_install_args(words)
        if args is not None:
            _read_conda_args(args, origin, out)


def _commands(rest: str) -> list[list[str]]:
    """A line's commands, each as its words; an exec form's array is one command."""
    if rest.startswith("["):  # a Dockerfile's exec form, or a shell's ``[ test ] && ...``
        try:
            array = json.loads(rest)
        except ValueError:
            array = None
        if isinstance(array, list):
            return [[str(word) for word in array]]
    commands = []
    for part in re.split(r"&&|\|\||;|\|", rest):
        try:  # a shell comment starts a word (``#egg=`` inside a URL is none)
            words = shlex.split(re.sub(r"(^|\s)#.*$", "", part))
        except ValueError:  # an unbalanced quote: not read
            continue
        if words:
            commands.append(words)
    return commands


def _without_prefix(words: list[str]) -> list[str]:
    """The command without ``sudo`` (and its options) or variable assignments before it."""
    while words and (words[0] == "sudo" or re.match(r"^\w+=", words[0])):
        words = words[1:]
        while words and words[0].startswith("-"):  # sudo's options (-H; -u USER)
            words = words[2:] if words[0] in ("-u", "-g") else words[1:]
    return words


def _pip_install_args(words: list[str]) -> list[str] | None:
    """The arguments after ``install`` of a pip command; None for any other command."""
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


def _conda_install_args(words: list[str]) -> list[str] | None:
    """The arguments after ``install`` or ``create`` of a conda (mamba) command; None for
    any other (``conda env create -f``: its file is read where init reads it)."""
    if not words or words[0].rsplit("/", 1)[-1] not in _CONDA:
        return None
    words = words[1:]
    while words and words[0].startswith("-"):
        words = words[1:]
    return words[1:] if words and words[0] in ("install", "create") else None


def _read_pip_args(args: list[str], origin: str, out: Imported) -> None:
    at = 0
    while at < len(args):
        word = args[at]
        option, equals, value = word.partition("=")
        if word in _SOURCES or (equals and option in _SOURCES):
            if not equals:
                at += 1
                value = args[at] if at < len(args) else ""
            if value and "$" not in value:
                kind = _SOURCES[option if equals else word]
                add_source(kind, value, f"{option if equals else word} {value}", origin, out)
        elif word in _INDEX or (equals and option in _INDEX):
            if not equals:
                at += 1
                value = args[at] if at < len(args) else ""
            if value and "$" not in value:
                add_index(value, f"{option if equals else word} {value}", origin, out)
        elif word in ("-r", "--requirement", "-e", "--editable") or word in _VALUED:
            at += 1  # a requirements file (read as such where init reads it), a value
            if word in ("-e", "--editable") and at < len(args):
                out.skipped.append(Skipped(f"{word} {args[at]}", origin,
                                           "an editable install: not locked"))
        elif word.startswith("-"):
            pass  # a flag (--upgrade, --no-cache-dir) or --option=value
        elif "$" in word:
            out.skipped.append(Skipped(word, origin, "a variable's value: not known without "
                                       "running the command"))
        elif word in (".", "./") or word.startswith(("/", "./", "../")):
            out.skipped.append(Skipped(word, origin, "a path (the repository itself, or a file "
                                       "an image copies in): not a dependency"))
        elif _installer(word):
            out.skipped.append(Skipped(word, origin, "the installer's own tools, upgraded "
                                       "before the install: the environment brings its own"))
        else:
            add_requirement(word, origin, out)
        at += 1


def _read_conda_args(args: list[str], origin: str, out: Imported) -> None:
    at = 0
    while at < len(args):
        word = args[at]
        if word in _CONDA_VALUED:
            at += 1  # a channel, an environment's name, a file
        elif word.startswith("-"):
            pass  # -y, --yes, -q, --override-channels, --channel=...
        elif "$" in word:
            out.skipped.append(Skipped(word, origin, "a variable's value: not known without "
                                       "running the command"))
        else:
            conda_item(word, origin, out)
        at += 1


def _installer(word: str) -> bool:
    """``pip``, and ``setuptools`` or ``wheel`` unpinned (``pip install -U pip setuptools
    wheel``, the first line of many images); a pinned setuptools stays."""
    name = re.split(r"[<>=!~\[;\s]", word, maxsplit=1)[0].lower()
    return name == "pip" or (name in ("setuptools", "wheel") and name == word.lower())

"""A Dockerfile's install commands as requirements: what a repository's image installed is
what its authors ran (``RUN pip install tensorflow-gpu==1.12 keras==2.2.4``), often its only
record of the framework's release. Read, never built or run.

Each ``RUN`` instruction (shell form, ``\\`` continuations joined; exec form's JSON array) is
read by ``installcmds`` (pip's and conda's installs), the ``ARG`` defaults and ``ENV``
values declared before it expanded (``ARG TF=1.12.0``, then ``pip install tensorflow==$TF``).
A ``FROM`` image that holds a framework gives its release
(``tensorflow/tensorflow:1.8.0-gpu-py3``: ``[[docker_image]]`` rows). The Dockerfile
reference: https://docs.docker.com/reference/dockerfile/ (ARG, ENV, RUN).
"""

from __future__ import annotations

import re
import shlex

from envforge.importers import Found, Imported
from envforge.importers.installcmds import expand, read_install_commands
from envforge.importers.legacy_names import legacy_names
from envforge.importers.pyfiles import logical_lines


def read_dockerfile(name: str, text: str) -> Imported:
    """The requirements the Dockerfile's ``RUN pip install`` commands name, each from its
    instruction's first line; what cannot be a requirement (a build variable, the
    repository itself, a requirements file it copies in) is reported or left to the files
    init reads as such."""
    out = Imported()
    variables: dict[str, str] = {}
    for number, instruction in logical_lines(text, dockerfile=True):
        keyword, _, rest = instruction.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            _read_image(expand(rest, variables).split(), f"{name}:{number}", out)
        elif keyword == "RUN":
            read_install_commands(expand(rest.strip(), variables), f"{name}:{number}", out)
        elif keyword in ("ARG", "ENV"):
            variables.update(_declared(keyword, rest.strip(), variables))
    return out


def _declared(keyword: str, rest: str, variables: dict[str, str]) -> dict[str, str]:
    """An ``ARG NAME=default`` or ``ENV NAME=value ...`` (``ENV NAME value``, the old form)
    as values a later instruction's ``$NAME`` takes; an ``ARG`` without a default sets none
    (the build gives it)."""
    try:
        words = shlex.split(rest)
    except ValueError:
        return {}
    if keyword == "ENV" and len(words) >= 2 and "=" not in words[0]:
        return {words[0]: expand(" ".join(words[1:]), variables)}
    declared: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if equals and re.match(r"^[A-Za-z_]\w*$", key):
            declared[key] = expand(value, {**variables, **declared})
    return declared


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

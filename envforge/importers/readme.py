"""What a repository's README states about its environment: often the only record of the
framework's release where the repository has no dependency file (utkuozbulak's
pytorch-cnn-visualizations: "torch == 0.4.1" under "## Requirements:"; carpedm20's
DCGAN-tensorflow: "Tensorflow 0.12.1" under "## Prerequisites").

Read, never trusted alone: a line counts where it sits in a section whose heading names
requirements, dependencies, prerequisites, the environment, installation, setup, the
libraries, packages or versions used or tested with (Markdown ``#`` headings, setext and
reStructuredText underlines, a short ``**Requirements**`` or ``Requirements:`` line), or
where it is an install command (``pip install torch==1.0.1``, ``conda install pytorch=1.0``)
anywhere in the README, read as a script's are (``installcmds``). A section's line may be a
PEP 508 requirement (``torch == 0.4.1``, ``numpy>=1.13.0``) or prose (``PyTorch 1.0.1``,
``Tensorflow v1.4``, ``Python 3.6+``, ``pytorch 1.0 or later``); a list, a table row and a
comma-separated line give each piece. Prose names a release line where its version has two
parts (``PyTorch 1.0``: ``==1.0.*``), one release where it has three or four, a floor with
``+`` or "or later". Outside such a section, what follows "tested with", "requires" and the
like on a line is read as a section's line is. The caller keeps only the distributions the
code imports: a README also names CUDA, Ubuntu and the project itself.
"""

from __future__ import annotations

import re
from dataclasses import replace

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envforge.importers import Found, Imported
from envforge.importers.codeimports import UNKNOWN
from envforge.importers.installcmds import read_install_commands
from envforge.importers.legacy_names import LegacyPack, map_requirement, module_group
from envforge.packapi import Registry

README_NAMES = ("readme.md", "readme.markdown", "readme.rst", "readme.txt", "readme")
NOTE = "stated in the README (the repository has no dependency file)"

_SECTION = re.compile(r"requirement|dependenc|prerequisite|pre-requisite|environment|install|"
                      r"setup|getting started|software|librar|package|tested|version",
                      re.IGNORECASE)
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+])\1{2,}\s*$")
_LABEL = re.compile(
    r"^\s*(?:\*\*|__)?([A-Za-z][\w /&-]{0,60}?)(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_PROMPT = re.compile(r"^\s*(?:\$|>|!|%|#)\s+")
_INSTALLS = re.compile(r"^(?:sudo\s+)?(?:pip\d*(?:\.\d+)?|python\d*(?:\.\d+)?\s+-m\s+pip|"
                       r"conda|mamba)\s+(?:install|create)\b")
_INLINE_CODE = re.compile(r"`([^`]+)`")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_MARKUP = re.compile(r"\*\*|__|`|\[|\]\([^)]*\)|<[^>]*>")
_SPLIT = re.compile(r",|;|\||\s+and\s+(?!later|above|newer|higher)|\s+&\s+", re.IGNORECASE)
_PEP508 = re.compile(
    r"^([A-Za-z][A-Za-z0-9._-]*)\s*((?:===?|>=|<=|~=|!=|>|<)\s*v?\d[\w.*+!-]*)\s*$")
_PROSE = re.compile(
    r"^([A-Za-z][A-Za-z0-9._-]*?)(?:\s+version)?\s*(?:\(|:|=)?\s*(?:version\s+)?v?"
    r"(\d+\.\d+(?:\.\d+){0,2})(\+|\s+or\s+(?:later|newer|above|higher)|\s+and\s+"
    r"(?:later|above|newer|higher))?\)?(?:\s.*)?$", re.IGNORECASE)
_TRIGGER = re.compile(r"\b(?:tested (?:with|on|under|using)|requires?|"
                      r"(?:works?|runs?|runnable|run) (?:with|on|under)|"
                      r"compatible with|depends on|developed (?:with|using|on|under)|"
                      r"built (?:with|on)|needs)\b:?", re.IGNORECASE)
_PYTHON_GLUED = re.compile(r"^python\s*(\d\.\d+)(\+)?$", re.IGNORECASE)


def readme_name(names: list[str]) -> str | None:
    """The README among a folder's file names (the first of README_NAMES' order)."""
    by_low = {name.lower(): name for name in names}
    return next((by_low[n] for n in README_NAMES if n in by_low), None)


def read_readme(name: str, text: str) -> Imported:
    """The requirements and Pythons the README states, each at ``name:line``."""
    out = Imported()
    lines = text.splitlines()
    in_section, fenced = False, False
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else _heading(line, lines[number] if number < len(lines) else "")
        if heading is not None:
            title, label = heading  # a label line opens a section, never closes one
            in_section = bool(_SECTION.search(title)) or (label and in_section)
            continue
        if not fenced and _UNDERLINE.match(line):
            continue
        origin = f"{name}:{number}"
        commands = [_PROMPT.sub("", line).strip(), *_INLINE_CODE.findall(line)]
        installs = [c for c in commands if _INSTALLS.match(c)]
        for command in installs:
            read_install_commands(command, origin, out)
        stated = _after_trigger(line) or (line if in_section and not installs else None)
        for piece in _pieces(stated) if stated else ():
            _read_piece(piece, origin, out)
    out.requirements = [replace(found, note=found.note or NOTE) for found in out.requirements]
    return out


_CLONE = re.compile(r"\bgit\s+clone\b.*?\s((?:https?|git|ssh)://\S+|git@\S+)")
_CLONE_BLOCK = 5  # the lines after a clone that say what it is for (cd, cp, mv)


def clone_for(text: str, module: str) -> tuple[int, str] | None:
    """(line, URL) of the README's first ``git clone`` that its own line or the few after it
    tie to ``module`` by its last part (NVlabs/SPADE's README.md:38 clones
    Synchronized-BatchNorm-PyTorch, then ``cp -rf Synchronized-BatchNorm-PyTorch/sync_batchnorm
    .`` into models/networks/); None where none does."""
    lines = text.splitlines()
    last = module.rpartition(".")[2]
    for number, line in enumerate(lines):
        found = _CLONE.search(line)
        if found is not None and any(re.search(rf"\b{re.escape(last)}\b", following)
                                     for following in lines[number:number + 1 + _CLONE_BLOCK]):
            return number + 1, found[1]
    return None


def _heading(line: str, following: str) -> tuple[str, bool] | None:
    """The heading's text where ``line`` is one (Markdown ``#``, an underlined line), or a
    short label line (``**Requirements**``, ``You will need:``), with whether it is a label."""
    match = _MD_HEADING.match(line)
    if match is not None and not line.lstrip().startswith("#!"):
        return match[1], False
    if line.strip() and _UNDERLINE.match(following) and not _UNDERLINE.match(line):
        return line.strip(), False
    label = _LABEL.match(line)
    if label is not None and (line.rstrip().endswith(":") or "**" in line or "__" in line):
        return label[1], True
    return None


def _after_trigger(line: str) -> str | None:
    """What follows "tested with", "requires" and the like (rykov8's ssd_keras: "This code
    was tested with `Keras` v1.2.2, `Tensorflow` v1.0.0"), in a section or not."""
    match = _TRIGGER.search(line)
    return line[match.end():] if match is not None else None


def _pieces(line: str) -> list[str]:
    """The line's statements: a table row's cells read as one (``| h5py | 2.7.1 |``), a
    list item without its bullet, a comma-separated line each piece."""
    text = _MARKUP.sub("", _BULLET.sub("", line)).strip()
    if text.startswith("|"):
        return [" ".join(cell.strip() for cell in text.strip("|").split("|"))]
    return [piece.strip(" .") for piece in _SPLIT.split(text) if piece.strip(" .")]


def _read_piece(piece: str, origin: str, out: Imported) -> None:
    glued = _PYTHON_GLUED.match(piece)
    if glued is not None:
        out.python.append((f">={glued[1]}" if glued[2] else f"=={glued[1]}", origin))
        return
    exact = _PEP508.match(piece)
    if exact is not None:
        name, specifier = exact[1], re.sub(r"\s+|(?<=[=<>~])v", "", exact[2])
    else:
        prose = _PROSE.match(piece)
        if prose is None:
            return
        name, version, later = prose[1], prose[2], prose[3]
        specifier = f">={version}" if later else (
            f"=={version}" if version.count(".") >= 2 else f"=={version}.*")
    if name.lower() == "python":
        out.python.append((specifier.removesuffix(".*"), origin))  # as a file states it
        return
    try:
        requirement = Requirement(f"{name}{specifier}")
    except InvalidRequirement:
        return
    out.requirements.append(Found(str(requirement), origin, NOTE))


def of_imported(stated: Imported, drafted: Imported,
                registry: Registry[LegacyPack]) -> Imported:
    """The README's statements about what the code imports (``drafted``: the requirements its
    imports call for, and the modules no knowledge names, skipped): the first for each
    distribution (awd-lstm-lm's README names PyTorch 0.4, then the 0.1.12 an older version
    of it needed), its names mapped as a file's are (``PyTorch`` is torch); a distribution
    the README names as a module the code imports is named (clovaai's ``pip3 install lmdb
    natsort`` beside ``import lmdb``); the README's first Python. The rest is left out
    unsaid: a README names CUDA, its OS and the project itself too."""
    wanted = {canonicalize_name(Requirement(f.requirement).name): Requirement(f.requirement).name
              for f in drafted.requirements}
    unknown = {canonicalize_name(s.what) for s in drafted.skipped if s.reason == UNKNOWN}
    groups = {module_group(name) for name in wanted}
    kept: list[Found] = []
    seen: set[str] = set()
    for found in stated.requirements:
        try:
            requirement = Requirement(found.requirement)
            group = module_group(Requirement(map_requirement(found.requirement,
                                                             registry)[0]).name)
        except InvalidRequirement:
            continue
        if group in seen or (group not in groups and group not in unknown):
            continue
        seen.add(group)
        written = wanted.get(canonicalize_name(requirement.name))
        if written is not None:  # as the code's distribution is spelt: "Tensorflow 1.0"
            requirement.name = written
        kept.append(replace(found, requirement=str(requirement)))
    return Imported(requirements=kept, python=stated.python[:1])

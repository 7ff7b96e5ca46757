"""A Jupyter notebook's code as one Python source, the way ``jupyter nbconvert --to script``
joins its code cells, for the scan of what it imports: IPython's own syntax (``%matplotlib
inline``, ``!pip install x``, ``files = !ls``, ``obj?``, a ``%%bash`` cell) becomes ``pass``,
so what stays parses as the Python it is, and each line keeps its cell and line there; and
the shell commands its cells run (``!pip install x``), which ``pycode.notebook_installs``
reads for what the notebook installs.

The notebook format: https://nbformat.readthedocs.io/en/latest/format_description.html (v4:
``cells``, each with ``cell_type`` and ``source``; v3: ``worksheets[].cells[]``, the code in
``input``). IPython's syntax: https://ipython.readthedocs.io/en/stable/interactive/magics.html
and .../interactive/reference.html (``!`` system shell, ``?`` help).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass

# cell magics whose body is Python (the others' is a shell script, HTML, a file's text, ...)
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_MAGIC_LINE = re.compile(r"^\s*(?:[%!?]|[\w.,\s]+=\s*[%!])")


@dataclass(frozen=True)
class NotebookSource:
    """The code cells joined; ``places[n - 1]`` is (cell, line in it) of line ``n``."""

    source: bytes
    places: tuple[tuple[int, int], ...]

    def where(self, line: int) -> tuple[int, int]:
        """(cell, line) of a line of ``source``; (0, 0) for none (a parser's line 0)."""
        return self.places[line - 1] if 0 < line <= len(self.places) else (0, 0)


Cells = tuple[tuple[int, str], ...]
"""(the cell's number among all cells, from 1; its code) of each code cell."""


def code_cells(data: bytes) -> Cells | None:
    """A notebook's code cells, or None where ``data`` is no notebook (not JSON, no cells)."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return _code_cells(document) if isinstance(document, dict) else None


def notebook_source(cells: Cells) -> NotebookSource:
    """The code cells as one Python source."""
    lines: list[str] = []
    places: list[tuple[int, int]] = []
    for number, text in cells:
        for at, line in enumerate(_python_lines(text), start=1):
            lines.append(line)
            places.append((number, at))
    return NotebookSource("\n".join(lines).encode("utf-8") + b"\n", tuple(places))


def shell_commands(cells: Cells) -> list[tuple[str, int, int]]:
    """(command, cell, line) of each shell command the code cells run: ``!cmd``, ``%pip
    ...`` and ``%conda ...`` (IPython's magics, read as ``pip ...`` and ``conda ...``) and a
    ``%%bash``/``%%sh`` cell's lines."""
    found = []
    for number, text in cells:
        lines = text.splitlines()
        shell = _first(lines).split(" ", 1)[0] in ("%%bash", "%%sh", "%%script")
        for at, line in enumerate(lines, start=1):
            stripped = line.strip()
            if shell and not stripped.startswith("%%"):
                found.append((stripped, number, at))
            elif stripped.startswith(("!", "%pip ", "%conda ")):
                found.append((stripped[1:], number, at))
    return found


def _code_cells(document: dict[str, object]) -> Cells | None:
    cells = document.get("cells")
    key = "source"
    if cells is None:  # nbformat 3
        sheets = document.get("worksheets")
        cells = [c for s in sheets if isinstance(s, dict) for c in s.get("cells") or ()] \
            if isinstance(sheets, list) else None
        key = "input"
    if not isinstance(cells, list):
        return None
    found = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell.get(key, "")
        if isinstance(text, list):
            text = "".join(part for part in text if isinstance(part, str))
        if isinstance(text, str):
            found.append((number, text))
    return tuple(found)


def _python_lines(text: str) -> list[str]:
    """A cell's lines: as they are where the cell parses as Python (a line of a continued
    expression may start with ``%``), else each of IPython's own syntax made ``pass`` at its
    indentation (a block stays a block), a whole cell where a cell magic's body is not
    Python."""
    lines = text.splitlines() or [""]
    if _parses(text):
        return lines
    first = _first(lines)
    if first.startswith("%%") and first[2:].split(" ", 1)[0] not in _PYTHON_CELL_MAGICS:
        return ["pass" if line.strip() else "" for line in lines]
    return [_python_line(line) for line in lines]


def _first(lines: list[str]) -> str:
    """A cell's first line that is not blank (a cell magic's), stripped."""
    return next((line.strip() for line in lines if line.strip()), "")


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _python_line(line: str) -> str:
    stripped = line.strip()
    if stripped.startswith("#") or not stripped:
        return line
    if _MAGIC_LINE.match(line) or stripped.endswith("?"):
        return line[:len(line) - len(line.lstrip())] + "pass"
    return line

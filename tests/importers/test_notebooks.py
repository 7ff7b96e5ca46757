"""A notebook's code cells as Python, IPython's own syntax set aside, each line's cell kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envforge.importers.notebooks import Cells, code_cells, notebook_source
from envforge.importers.pycode import scan_code


def _v4(*cells: tuple[str, str]) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 2, "metadata": {}, "cells": [
        {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
         **({"outputs": [], "execution_count": None} if kind == "code" else {})}
        for kind, text in cells]}).encode()


def _cells(data: bytes) -> Cells:
    cells = code_cells(data)
    assert cells is not None
    return cells


def test_ipythons_own_syntax_becomes_pass_and_each_line_keeps_its_cell() -> None:
    found = notebook_source(_cells(_v4(
        ("markdown", "# Title\nimport nothing_here"),
        ("code", "%matplotlib inline\nimport numpy as np\nfiles = !ls\nnp.zeros?"),
        ("code", "%%bash\npip install x\nimport not_python"),
        ("code", "%%time\nimport scipy\nfor i in range(2):\n    !echo $i"),
        ("code", 'msg = ("%d items"\n       % 3)'))))  # a continued line that starts with %
    assert found.source.decode().splitlines() == [
        "pass", "import numpy as np", "pass", "pass",
        "pass", "pass", "pass",
        "pass", "import scipy", "for i in range(2):", "    pass",
        'msg = ("%d items"', "       % 3)"]
    assert found.where(2) == (2, 2) and found.where(9) == (4, 2) and found.where(13) == (5, 2)
    assert found.where(0) == (0, 0)


def test_a_version_3_notebook_is_read_and_what_is_no_notebook_is_none() -> None:
    v3 = {"nbformat": 3, "worksheets": [{"cells": [
        {"cell_type": "code", "input": ["import theano\n", "print theano.config"]}]}]}
    found = notebook_source(_cells(json.dumps(v3).encode()))
    assert found.source == b"import theano\nprint theano.config\n"
    for data in (b"not json", b"[1, 2]", b'{"cells": 3}', b"{}"):
        assert code_cells(data) is None


@pytest.mark.parametrize("python2", [False, True])
def test_a_notebooks_imports_are_the_codes_with_its_cell_and_line(
        tmp_path: Path, python2: bool) -> None:
    """Hvass-Labs/TensorFlow-Tutorials: 23 notebooks, the tutorials' own imports in them
    (pandas, prettytensor, gym) and none in requirements.txt; a Python 2 notebook's
    imports are read line by line, as a .py file's are, its failing line named by cell."""
    printing = "print 'shape', x.shape\n" if python2 else "print(x.shape)\n"
    (tmp_path / "01_Tutorial.ipynb").write_bytes(_v4(
        ("markdown", "Some text"), ("code", "%matplotlib inline\nimport pandas as pd"),
        ("code", f"from mnist import MNIST\nx = MNIST()\n{printing}")))
    (tmp_path / "mnist.py").write_text("class MNIST:\n    shape = 1\n")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "01_Tutorial-checkpoint.ipynb").write_bytes(
        _v4(("code", "import hidden")))
    (tmp_path / "broken.ipynb").write_text("{ not a notebook")
    found = scan_code(tmp_path, (3, 7))
    assert found.imports == {"pandas": "01_Tutorial.ipynb:cell 2, line 2",
                             "mnist": "01_Tutorial.ipynb:cell 3, line 1"}
    assert (found.files, found.notebooks, found.local) == (2, ("01_Tutorial.ipynb",),
                                                          frozenset({"mnist"}))
    assert "01_Tutorial.ipynb" not in found.named
    if python2:
        assert [(p, n) for p, n, _ in found.failing] == [("01_Tutorial.ipynb:cell 3", 3)]
        note = found.summary("3.7")
        assert note is not None and note.startswith(
            "1 of 2 .py files and notebooks do not parse as Python 3.7 (first: "
            "01_Tutorial.ipynb:cell 3:3: ")
    else:
        assert found.failing == ()


def test_a_notebooks_shell_commands_are_its_bang_lines_pip_magic_and_shell_cells() -> None:
    from envforge.importers.notebooks import shell_commands

    data = _v4(("code", "!pip install -q tensorflow==1.14.0\nimport tensorflow as tf"),
               ("markdown", "!pip install nothing"),
               ("code", "%pip install keras==2.2.4\nx = 1"),
               ("code", "%%bash\npip install gym==0.15.4\necho done"))
    assert shell_commands(_cells(data)) == [("pip install -q tensorflow==1.14.0", 1, 1),
                                            ("pip install keras==2.2.4", 3, 1),
                                            ("pip install gym==0.15.4", 4, 2),
                                            ("echo done", 4, 3)]


def test_a_notebook_carrying_megabytes_of_outputs_is_read(tmp_path: Path) -> None:
    """Hvass-Labs' 23_Time-Series-Prediction.ipynb is 1.2 MB of plots around a few KB of
    code: read to the dependency files' 1 MiB, it was skipped and its pandas import unseen."""
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1,
            "source": ["import pandas as pd\n"],
            "outputs": [{"output_type": "display_data", "metadata": {},
                         "data": {"image/png": "iVBORw0KGgo" * 200_000}}]}
    (tmp_path / "big.ipynb").write_text(json.dumps(
        {"nbformat": 4, "nbformat_minor": 2, "metadata": {}, "cells": [cell]}))
    assert (tmp_path / "big.ipynb").stat().st_size > 2 * (1 << 20)
    assert scan_code(tmp_path, (3, 7)).imports == {"pandas": "big.ipynb:cell 1, line 1"}


def test_a_notebook_is_parsed_once_for_its_installs_and_its_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """init reads a notebook for what it installs, then for what it imports at one Python
    and maybe another: one JSON parse for all (a tutorial's notebooks run to megabytes);
    a new version of the file is read again."""
    from envforge.importers import pycode

    parsed: list[int] = []

    def counting(data: bytes) -> Cells | None:
        parsed.append(len(data))
        return code_cells(data)

    monkeypatch.setattr(pycode, "code_cells", counting)
    (tmp_path / "nb.ipynb").write_bytes(_v4(("code", "!pip install six==1.12.0\nimport six"),
                                            ("code", "%conda install -y pytorch=1.0.1 -c pytorch")))
    assert [f.requirement for f in pycode.notebook_installs(tmp_path)[0].requirements] == \
        ["six==1.12.0", "torch==1.0.1"]
    assert scan_code(tmp_path, (3, 7)).imports == scan_code(tmp_path, (3, 6)).imports == \
        {"six": "nb.ipynb:cell 1, line 2"}
    assert len(parsed) == 1
    (tmp_path / "nb.ipynb").write_bytes(_v4(("code", "import numpy, six")))
    assert scan_code(tmp_path, (3, 7)).imports == {"numpy": "nb.ipynb:cell 1, line 1",
                                                  "six": "nb.ipynb:cell 1, line 1"}
    assert len(parsed) == 2

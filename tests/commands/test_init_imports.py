"""envforge init on a repository with no dependency file: the spec is drafted from what its
code imports, every requirement on the line that imports it, unpinned, said so in the spec and
the report; a module envforge does not know is reported and left to the user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from envforge.cli import main
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _repository(root: Path) -> Path:
    """pytorch-cifar's shape: scripts importing torch and torchvision beside its own modules
    (a Python 2 package, ``from vgg import *``), and one module nobody can install by name."""
    (root / "models").mkdir(parents=True)
    (root / "models" / "__init__.py").write_text("from vgg import *\n")
    (root / "models" / "vgg.py").write_text("import torch.nn as nn\n")
    (root / "utils.py").write_text("import os\nimport sys\n")
    (root / "main.py").write_text(
        "from __future__ import print_function\nimport argparse\nimport torch\n"
        "import torchvision\nfrom models import *\nfrom utils import progress_bar\n"
        "import caffe\n")
    return root


def test_offline_init_drafts_the_spec_from_the_imports_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _repository(tmp_path / "cifar")
    out = tmp_path / "specs" / "cifar.toml"
    assert main(["init", str(root), "-o", str(out), "--offline", "--json"]) == 0
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert list(pspec.pypi.packages) == ["torch", "torchvision"]
    assert "torch" in pspec.packs  # the framework's section, as for a named requirement
    text = out.read_text()
    assert text.startswith("# Written by `envforge init ") and \
        "from its code's imports (no dependency file).\n# No dependency file: each " in text
    assert '    "torch",  # main.py:3; that line imports torch; nothing pinned it' in text
    assert '    "torchvision",  # main.py:4; that line imports torchvision;' in text
    assert "#   main.py:7: caffe: imported, but neither the repository's own module" in text
    report = json.loads(capsys.readouterr().out)
    assert report["from_imports"] is True and report["files"] == []
    assert [(r["requirement"], r["origin"]) for r in report["requirements"]] == [
        ("torch", "main.py:3"), ("torchvision", "main.py:4")]
    assert [(s["what"], s["origin"]) for s in report["not_imported"]] == [
        ("caffe", "main.py:7")]
    assert main(["init", str(root), "-o", str(out), "--offline", "--force"]) == 0
    shown = capsys.readouterr()
    assert "from its code's imports (no dependency file)" in shown.out + shown.err
    assert "not imported: main.py:7: caffe: imported, but neither" in shown.err
    assert "no dependency file: each requirement is a distribution the code imports, from " \
           "the file:line that imports it, and nothing pinned it" in shown.err


def test_a_folder_whose_code_imports_nothing_installable_is_still_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "main.py").write_text("import os\nimport helper\n")
    (tmp_path / "r" / "helper.py").write_text("import sys\n")
    assert main(["init", str(tmp_path / "r"), "-o", str(tmp_path / "x.toml"), "--offline"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "no .py file of it imports a distribution" in line
    assert not (tmp_path / "x.toml").exists()


@pytest.mark.network
def test_pytorch_cifar_with_no_dependency_file_resolves_the_pytorch_of_its_era(
        tmp_path: Path) -> None:
    """kuangliu/pytorch-cifar at 2018-11-05 (tests/corpus: its code, no dependency file, as
    the repository has none): torch and torchvision from main.py's imports; PyPI has no torch
    wheel for Python 3.7 of that day (0.4.1's were on download.pytorch.org), so the day is
    widened until the pair resolves, and only the pair takes the later day."""
    folder = CORPUS / "kuangliu__pytorch-cifar"
    source = tomllib.loads((folder / "SOURCE.toml").read_text(encoding="utf-8"))
    root = tmp_path / "pytorch-cifar"
    shutil.copytree(folder / "code", root)
    dated = {**os.environ, "GIT_AUTHOR_DATE": source["date"],
             "GIT_COMMITTER_DATE": source["date"]}
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "source"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=dated)
    out = tmp_path / "specs" / "pytorch-cifar.toml"
    assert main(["init", str(root), "-o", str(out)]) == 0
    pspec = load_spec(out, REGISTRY).for_platform("linux-64")
    assert list(pspec.pypi.packages) == ["torch", "torchvision"]
    assert str(pspec.pypi.as_of) == "2018-11-05"
    assert set(pspec.pypi.as_of_packages) == {"torch", "torchvision"}
    assert all(day.isoformat() > "2018-11-05" for day in pspec.pypi.as_of_packages.values())
    text = out.read_text()
    assert '"torch",  # main.py:4; that line imports torch; nothing pinned it' in text
    assert "# resolve as of the repository's last commit, 2018-11-05" in text

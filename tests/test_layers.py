"""The layering in pyproject.toml's import-linter contract holds, and would catch a back-arrow.

The contract is run by ``make lint``; here it runs on the real tree and on a copy of the
package with one planted back-arrow (host/ -> app/, steps/ -> bundle/, a core module -> a pack,
a pack -> another, verify -> doctor, doctor -> executor), which must break it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w

pytest.importorskip("importlinter")

REPO = Path(__file__).resolve().parents[1]
RUN = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _lint(root: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with ``config`` on the ``envforge`` package found first under ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONUTF8": "1"}
    return subprocess.run([sys.executable, "-c", RUN, "--config", str(config), "--no-cache",
                           "--no-logo"], cwd=root, env=env, capture_output=True, text=True,
                          encoding="utf-8", timeout=300, check=False)


def _config(into: Path) -> Path:
    tool = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    path = into / "importlinter.toml"
    path.write_text(tomli_w.dumps({"tool": {"importlinter": tool["importlinter"]}}),
                    encoding="utf-8")
    return path


def test_the_package_keeps_its_layers(tmp_path: Path) -> None:
    done = _lint(REPO, _config(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 kept, 0 broken" in done.stdout


# (module, what it is made to import, the line lint-imports must print)
PLANTED = [
    ("host/fetch.py", "envforge.app.context",
     "envforge.host is not allowed to import envforge.app"),
    ("steps/pypi.py", "envforge.bundle.sources",  # the edge the Sources protocol removed
     "envforge.steps is not allowed to import envforge.bundle"),
    ("bundle/check.py", "envforge.packs",  # a sibling of packs: only app loads them
     "envforge.bundle is not allowed to import envforge.packs"),
    ("packs/keras/knowledge.py", "envforge.packs.tensorflow.knowledge",
     "envforge.packs.keras is not allowed to import envforge.packs.tensorflow"),
    ("verify/judge.py", "envforge.doctor.facts",
     "envforge.verify is not allowed to import envforge.doctor"),
    ("doctor/fixes.py", "envforge.executor",  # the edge app/doctorfixes.py removed
     "envforge.doctor is not allowed to import envforge.executor"),
]


@pytest.mark.parametrize(("module", "planted", "broken"), PLANTED)
def test_a_planted_back_arrow_breaks_the_contract(tmp_path: Path, module: str, planted: str,
                                                  broken: str) -> None:
    copy = tmp_path / "src"
    shutil.copytree(REPO / "envforge", copy / "envforge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "envforge" / module
    target.write_text(target.read_text(encoding="utf-8")
                      + f"\n\ndef _planted() -> None:\n    import {planted}\n",
                      encoding="utf-8")
    done = _lint(copy, _config(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    importer = "envforge." + module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {planted}" in done.stdout, done.stdout
    assert broken in done.stdout, done.stdout

"""The layering in pyproject.toml's import-linter contract holds, and would catch a back-arrow.

The contract is run by ``make lint``; here it runs on the real tree and on a copy of the
package with one planted import from host/ up into the application layer, which must break it.
"""

from __future__ import annotations

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
    return subprocess.run([sys.executable, "-c", RUN, "--config", str(config), "--no-cache",
                           "--no-logo"], cwd=root, env={"PYTHONPATH": str(root),
                                                        "PATH": "", "PYTHONUTF8": "1"},
                          capture_output=True, text=True, timeout=300, check=False)


def _config(into: Path) -> Path:
    tool = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    path = into / "importlinter.toml"
    path.write_text(tomli_w.dumps({"tool": {"importlinter": tool["importlinter"]}}),
                    encoding="utf-8")
    return path


def test_the_package_keeps_its_layers(tmp_path: Path) -> None:
    done = _lint(REPO, _config(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_a_back_arrow_from_host_to_the_app_layer_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(REPO / "envforge", copy / "envforge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    fetch = copy / "envforge" / "host" / "fetch.py"
    fetch.write_text(fetch.read_text(encoding="utf-8")
                     + "\n\ndef _planted() -> None:\n    from envforge.app import context\n",
                     encoding="utf-8")
    done = _lint(copy, _config(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "envforge.host is not allowed to import envforge.app" in done.stdout
    assert "envforge.host.fetch -> envforge.app.context" in done.stdout

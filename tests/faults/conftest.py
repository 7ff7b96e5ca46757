"""Fixtures of the fault suite, and its tally: how many cases of each family passed."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from envforge.app.locking import lock_spec
from envforge.lockfile import write_lock
from envforge.spec import load_spec
from tests.faults.harness import TINY, USER_RC
from tests.testing.packs import REGISTRY

TALLY: Counter[tuple[str, str]] = Counter()


def count(family: str, outcome: str = "passed", n: int = 1) -> None:
    """Cases inside one test (every journal line, every round) are counted one by one."""
    TALLY[(family, outcome)] += n


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TALLY:
        return
    terminalreporter.section("fault suite")
    for family in sorted({f for f, _ in TALLY}):
        passed, failed = TALLY[(family, "passed")], TALLY[(family, "failed")]
        terminalreporter.write_line(f"{family}: {passed} cases passed, {failed} failed")


@dataclass(frozen=True)
class World:
    """One test's machine: a home, envforge's folders, a project with two small specs."""

    home: Path
    efhome: Path
    project: Path
    env: dict[str, str]

    def spec(self, name: str) -> Path:
        return self.project / "specs" / f"{name}.toml"

    @property
    def state(self) -> Path:
        return self.efhome / "state"


@pytest.fixture(scope="session")
def locked_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Specs ``a``, ``b`` and ``c`` (all ~/.theanorc, each its floatX) and ``env`` (its own rc),
    locked once for the session; and the cache their downloads share."""
    project = tmp_path_factory.mktemp("project")
    session_home = tmp_path_factory.mktemp("envforge-home")
    (session_home / "cache").mkdir()
    (project / "specs").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENVFORGE_HOME", str(session_home))
        for name, floatx, rc in (("a", "float64", "home"), ("b", "float32", "home"),
                                 ("c", "float16", "home"), ("env", "float64", "env")):
            path = project / "specs" / f"{name}.toml"
            path.write_text(TINY.format(name=name, floatx=floatx, theanorc=rc))
            write_lock(lock_spec(load_spec(path, REGISTRY), REGISTRY, platforms=["linux-64"]),
                       project / "locks" / f"{name}.lock")
    return project, session_home / "cache"


@pytest.fixture
def world(locked_project: tuple[Path, Path], tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> World:
    project, cache = locked_project
    mine = tmp_path / "project"
    shutil.copytree(project, mine)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".theanorc").write_bytes(USER_RC)
    (home / ".theanorc").chmod(0o600)
    efhome = tmp_path / "ef"
    efhome.mkdir()
    (efhome / "cache").symlink_to(cache)
    env = {**os.environ, "HOME": str(home), "ENVFORGE_HOME": str(efhome),
           "PYENV_ROOT": os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))}
    for key in ("HOME", "ENVFORGE_HOME", "PYENV_ROOT"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.chdir(mine)
    return World(home, efhome, mine, env)

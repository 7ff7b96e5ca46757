"""Real legacy repositories, one per framework and one with no dependency file at all, run
their own model code in the environment envforge makes from their dependency files (or, with
none, their code's imports), unaided (issue 25): init (no edit), lock, apply, verify, then
``envforge run SPEC -- python drivers/NAME.py`` trains the repository's model a few steps on
small random data on the CPU, then rollback.

Each repository is its corpus folder (tests/corpus/OWNER__NAME: the dependency files and,
under ``code/``, the few source files its model needs, byte for byte from the source commit)
laid out as the repository holds them, with a git history dated as that commit; the driver
(tests/corpus/drivers, ours) is copied to ``drivers/``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.testing.homes import home_sharing

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
RUNS = [  # corpus folder, driver: one per framework (tests/corpus/README.md says why these)
    ("pymc-learn__pymc-learn", "pmlearn_linear.py"),  # Theano (PyMC3 3.4 on Theano-PyMC)
    ("tkipf__gcn", "gcn.py"),  # TensorFlow 1.15
    ("eriklindernoren__PyTorch-GAN", "cyclegan.py"),  # PyTorch 1.2
    # no dependency file: the requirements are drafted from the code's imports (one here;
    # kuangliu__pytorch-cifar's run, ResNet18 on torch 1.3, was taken by hand: a second
    # PyTorch wheel of 0.7 GB is more than make test should fetch for the same path)
    ("carpedm20__DCGAN-tensorflow", "dcgan.py"),  # TensorFlow 1.14, scipy<1.3 and Pillow
]
TIMEOUT_S = 600  # one command; the three tests together took 5 min 4 s here


def repository(folder: Path, driver: str, root: Path, env: dict[str, str]) -> Path:
    """The repository as its source commit held the copied files, dated as that commit."""
    source = tomllib.loads((folder / "SOURCE.toml").read_text(encoding="utf-8"))
    shutil.copytree(folder, root, ignore=shutil.ignore_patterns("SOURCE.toml", "code"))
    shutil.copytree(folder / "code", root, dirs_exist_ok=True)
    (root / "drivers").mkdir()
    shutil.copy2(CORPUS / "drivers" / driver, root / "drivers" / driver)
    dated = {**env, "GIT_AUTHOR_DATE": source["date"], "GIT_COMMITTER_DATE": source["date"]}
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "source"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=dated)
    return root


def envforge(*args: str, env: dict[str, str], cwd: Path,
             ) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "envforge", *args], env=env, cwd=cwd,
                          text=True, capture_output=True, timeout=TIMEOUT_S, check=False)
    return done, time.monotonic() - start


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(("name", "driver"), RUNS, ids=[name for name, _ in RUNS])
def test_a_real_repository_runs_its_own_model_in_the_environment_envforge_makes(
        tmp_path: Path, name: str, driver: str, capsys: pytest.CaptureFixture[str],
        shared_cache: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    envforge_home = home_sharing(tmp_path / "envforge-home", shared_cache)  # the run's wheels
    env = {**os.environ, "ENVFORGE_HOME": str(envforge_home), "HOME": str(home)}
    root = repository(CORPUS / name, driver, tmp_path / name, env)
    spec = tmp_path / "specs" / f"{name}.toml"
    times: dict[str, float] = {}
    for step, args in (("init", ["init", str(root), "-o", str(spec)]),
                       ("lock", ["lock", str(spec)]),
                       ("apply", ["apply", str(spec), "--yes"]),
                       ("verify", ["verify", str(spec)]),
                       ("run", ["run", str(spec), "--", "python", f"drivers/{driver}"])):
        done, times[step] = envforge(*args, env=env, cwd=root)
        assert done.returncode == 0, f"{step}: exit {done.returncode}\n{done.stderr[-4000:]}"
    assert "\nok loss=" in f"\n{done.stdout}", done.stdout
    rolled, _ = envforge("rollback", str(spec), env=env, cwd=root)
    assert rolled.returncode == 0, rolled.stderr
    with capsys.disabled():
        shown = ", ".join(f"{step} {seconds:.0f} s" for step, seconds in times.items())
        print(f"\n{name}: {shown}; {done.stdout.strip().splitlines()[-1]}")

"""The suite's data (subsets, known-bad rows with their sources) and the command it builds."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from envforge.bundle.build import lock_items, suite_items
from envforge.lockfile import load_lock
from envforge.packs.theano.knowledge import (
    known_bad_tests,
    suite_knowledge,
    suite_runner,
    suite_subset,
)
from envforge.suite.runner import SuiteFolder, pytest_args, suite_environ, workers_for
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
_NODE = re.compile(r"^theano/[\w/]+\.py(::\w+)*$")


def test_subsets_follow_the_device_and_name_real_test_paths() -> None:
    cpu, gpu = suite_subset("1.0.5", "cpu"), suite_subset("1.0.5", "cuda0")
    assert cpu is not None and gpu is not None
    assert (cpu.name, gpu.name) == ("cpu", "gpu")
    assert all(_NODE.match(t) for t in (*cpu.tests, *gpu.tests))
    assert {t.split("/")[-1].split(".py")[0] for t in gpu.tests} == {
        "test_basic_ops", "test_blas", "test_elemwise", "test_subtensor", "test_scan"}
    assert suite_subset("1.1.2", "cpu") is None and suite_runner("1.1.2") is None


def test_every_known_bad_row_is_narrow_and_gives_its_reason_and_the_sdists_file_and_line(
        ) -> None:
    rows = suite_knowledge().known_bad
    assert rows
    for row in rows:
        assert _NODE.match(row.test) and "::" in row.test, row.test
        assert row.tests, f"{row.test}: name the tests that fail"
        assert row.reason and re.search(r"theano/[\w/]+\.py:\d+", row.source), row.source
        assert "seen on the H200, 2026-12-01" in row.source and "*inferred*" not in row.source
    assert len({r.test for r in rows}) == len(rows)
    gpu = known_bad_tests("1.0.5", "cuda", {"scipy": "1.6.0"})
    classes = {r.test.rsplit("::", 1)[-1] for r in gpu}
    assert classes >= {"TestGer", "TestGpuSger", "TestGPUSubtensorF16", "TestGpuDot22",
                       "TestMathErrorFunctions"}
    # Read as suspect, passed on the H200: no rows.
    assert not classes & {"TestAlloc", "TestComparison", "TestJoinAndSplit", "TestGpuAllocDiag"}
    # erfinv's row is SciPy's: not where the lock holds a SciPy before 1.4, or none.
    erf = "theano/gpuarray/tests/test_elemwise.py::TestMathErrorFunctions"
    assert erf not in {r.test for r in known_bad_tests("1.0.5", "cuda", {"scipy": "1.3.3"})}
    assert erf not in {r.test for r in known_bad_tests("1.0.5", "cuda")}
    assert known_bad_tests("1.0.5", "cpu", {"scipy": "1.6.0"}) == ()


def test_pytest_runs_the_sdists_tests_against_the_installed_package(tmp_path: Path) -> None:
    subset = suite_subset("1.0.5", "cpu")
    assert subset is not None
    folder = SuiteFolder(tmp_path, tmp_path / "runner", tmp_path / "source")
    junit = tmp_path / "out.xml"
    args = pytest_args(folder, subset, junit=junit, workers=2)
    assert args[:4] == ["-m", "pytest", "-p", "envforge_suite_plugin"]
    assert "--import-mode=append" in args and "--continue-on-collection-errors" in args
    assert args[args.index("-n") + 1] == "2" and args[args.index("-m", 2) + 1] == "not slow"
    assert args[args.index("--junitxml") + 1] == str(junit)
    assert args[-len(subset.tests):] == [str(folder.source / t) for t in subset.tests]
    assert "-n" not in pytest_args(folder, subset, junit=junit, workers=1)
    assert args[args.index("--dist") + 1] == "loadfile"
    env = suite_environ({"PATH": "/bin", "PYTHONPATH": "/elsewhere", "PYTEST_ADDOPTS": "-x"},
                        folder, package="theano", compiledir=tmp_path / "c")
    assert env["PYTHONPATH"] == str(folder.runner) and "PYTEST_ADDOPTS" not in env
    assert env["ENVFORGE_SUITE_SOURCE"] == str(folder.source) and env["PATH"] == "/bin"
    assert "THEANO_FLAGS" not in env


def test_the_gpu_subset_shares_classes_out_and_keeps_workers_from_preallocating(
        tmp_path: Path) -> None:
    """Five modules, one of them half the tests: by module, most of 16 cores would idle. A
    spec's preallocated fraction of the GPU would leave the other workers none."""
    gpu = suite_subset("1.0.5", "cuda")
    assert gpu is not None
    folder = SuiteFolder(tmp_path, tmp_path / "runner", tmp_path / "source")
    args = pytest_args(folder, gpu, junit=tmp_path / "out.xml", workers=16)
    assert args[args.index("--dist") + 1] == "loadscope"
    env = suite_environ({"THEANO_FLAGS": "device=cuda,gpuarray.preallocate=0.9"}, folder,
                        package="theano", compiledir=tmp_path / "c",
                        settings=("THEANO_FLAGS", gpu.theano_flags))
    # Theano takes the last of a flag given twice: the subset's.
    assert env["THEANO_FLAGS"] == "device=cuda,gpuarray.preallocate=0.9,gpuarray.preallocate=0"
    assert workers_for(None) == 1 and workers_for(16) == 16


def test_the_lock_carries_the_runner_apart_and_bundles_take_it_when_asked() -> None:
    lock = load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY)
    for platform, plock in lock.platforms.items():
        assert plock.suite is not None, platform
        names = {f.name for f in plock.suite.runner}
        assert {"pytest", "pytest-xdist"} <= names
        assert not names & {f.name for f in plock.pypi}  # the environment keeps its own
        assert all(f.kind == "wheel" for f in plock.suite.runner)
    assert "colorama" in {f.name for f in lock.platforms["win-64"].suite.runner}  # type: ignore[union-attr]
    assert not [i for i in lock_items(lock.platforms["linux-64"]) if i.role == "suite"]
    carried = {i.dest for i in suite_items(lock.platforms["linux-64"])}  # bundle --with-suite
    assert "suite/Theano-PyMC-1.0.5.tar.gz" in carried
    assert any(d.startswith("suite/pytest-7.4.4") for d in carried)


def test_a_lock_from_before_the_suite_is_re_resolved_not_reused() -> None:
    from envforge.app.locksuite import suite_missing

    plock = load_lock(REPO / "locks" / "theano-gpu-linux.lock", REGISTRY).platforms["linux-64"]
    assert plock.suite is not None and not suite_missing(plock, REGISTRY)
    assert suite_missing(plock.model_copy(update={"suite": None}), REGISTRY)


def test_suite_without_a_test_group_in_the_lock_is_bad_input_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from envforge.cli import main
    from envforge.lockfile import write_lock

    shutil.copytree(REPO / "specs", tmp_path / "specs")
    lock_path = tmp_path / "locks" / "theano-cpu.lock"
    lock = load_lock(REPO / "locks" / "theano-cpu.lock", REGISTRY)
    bare = {p: pl.model_copy(update={"suite": None}) for p, pl in lock.platforms.items()}
    write_lock(lock.model_copy(update={"platforms": bare}), lock_path)
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    spec = str(tmp_path / "specs" / "theano-cpu.toml")
    assert main(["verify", spec, "--suite"]) == 2
    assert "no test group for --suite" in capsys.readouterr().err
    assert main(["verify", spec, "--suite", "--suite-workers", "0"]) == 2
    assert main(["verify", spec, "--suite", "--suite-time-limit", "0"]) == 2
    assert "--suite-time-limit 0" in capsys.readouterr().err
    assert not (tmp_path / "home" / "cache" / "suite").exists()

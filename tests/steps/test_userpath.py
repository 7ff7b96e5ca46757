"""The user PATH step against a recording registry holding a realistic Windows user Path."""

from __future__ import annotations

import sys
from pathlib import Path, PureWindowsPath

import pytest

from envforge.errors import StepError
from envforge.host.windows import (
    REG_EXPAND_SZ,
    REG_SZ,
    USER_ENVIRONMENT,
    RecordingRegistry,
    RegistryWrite,
    WinRegistry,
    cuda_bin_version,
    split_path,
)
from envforge.journal import Journal, Transaction, rollback
from envforge.lockfile import LockedArtifact
from envforge.plan import build_steps
from envforge.steps.base import StepContext
from envforge.steps.userpath import UserPathStep
from envforge.ui import UI
from tests.steps.test_compiler import MINGW, MINGW_NAME, captured_ui, make_ctx
from tests.steps.test_cudnn import windows_cuda_tree
from tests.testing.contexts import apply_step

DATA = Path(r"C:\Users\alice\AppData\Local\envforge")
CUDA = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA"
MINGW_BIN = r"C:\Users\alice\AppData\Local\envforge\tools\mingw-w64-8.1.0-posix-seh\mingw64\bin"
ENVIRON = {"USERPROFILE": r"C:\Users\alice", "CUDA_PATH_V10_2": rf"{CUDA}\v10.2",
           "CUDA_PATH_V9_0": rf"{CUDA}\v9.0", "CUDA_PATH": rf"{CUDA}\v10.2"}
USER_PATH = ";".join([
    r"%USERPROFILE%\AppData\Local\Microsoft\WindowsApps",
    rf"{CUDA}\v9.0\bin",
    rf"{CUDA}\v9.0\libnvvp",
    r"%USERPROFILE%\.dotnet\tools",
    r"%CUDA_PATH_V10_2%\bin",  # ours, in its variable form, in the middle
    r"C:\Users\alice\AppData\Local\Programs\Microsoft VS Code\bin",
])
ARRANGED = ";".join([
    MINGW_BIN,
    rf"{CUDA}\v10.2\bin",
    r"%USERPROFILE%\AppData\Local\Microsoft\WindowsApps",
    rf"{CUDA}\v9.0\bin",
    rf"{CUDA}\v9.0\libnvvp",
    r"%USERPROFILE%\.dotnet\tools",
    r"C:\Users\alice\AppData\Local\Programs\Microsoft VS Code\bin",
])
COMPILER = LockedArtifact(role="compiler", filename=MINGW_NAME, sha256="8" * 64,
                          url="https://example.invalid/mingw.7z", source="test")


def win_ctx(tmp: Path, *, ui: UI | None = None, cuda_root: Path | None = None) -> StepContext:
    """Only strings are computed from these Windows paths; nothing is read from them."""
    return make_ctx(tmp, "win-64", compiler=MINGW, artifacts=(COMPILER,), environ=ENVIRON,
                    cuda="10.2", cuda_root=cuda_root or Path(rf"{CUDA}\v10.2"),
                    path_scope="user", data=DATA, ui=ui)


def registry_with(value: str | None, value_type: int = REG_EXPAND_SZ) -> RecordingRegistry:
    values = {} if value is None else {(USER_ENVIRONMENT, "Path"): (value, value_type)}
    return RecordingRegistry(values=dict(values))


def apply(step: UserPathStep, ctx: StepContext) -> Journal:
    return apply_step(step, ctx)


def test_mingw_first_one_cuda_bin_other_cuda_reported_and_rolled_back(tmp_path: Path) -> None:
    registry = registry_with(USER_PATH)
    original = dict(registry.values)
    ui, err = captured_ui()
    ctx = win_ctx(tmp_path, ui=ui)
    step = UserPathStep(registry)

    (change,) = step.describe(ctx)
    assert (change.action, change.target) == ("set", rf"{USER_ENVIRONMENT}\Path")
    assert (change.before, change.after) == (USER_PATH, ARRANGED)
    assert f"+{MINGW_BIN}" in change.detail and "-%CUDA_PATH_V10_2%\\bin" in change.detail
    assert "(after, REG_EXPAND_SZ)" in change.detail
    assert registry.writes == [] and registry.broadcasts == 0  # describe changes nothing

    journal = apply(step, ctx)

    value, value_type = registry.get(USER_ENVIRONMENT, "PATH") or ("", 0)
    assert (value, value_type) == (ARRANGED, REG_EXPAND_SZ)
    entries = split_path(str(value))
    assert entries[0] == MINGW_BIN
    assert [e for e in entries if cuda_bin_version(e, ENVIRON) == "10.2"] == [rf"{CUDA}\v10.2\bin"]
    assert registry.broadcasts == 1
    warnings = err.getvalue()
    assert f"PATH also holds {CUDA}\\v9.0\\bin (CUDA 9.0)" in warnings
    assert warnings.count("warning:") == 1  # reported once, though describe ran twice

    assert step.describe(ctx) == ()
    apply(step, ctx)
    assert len(registry.writes) == 1 and registry.broadcasts == 1

    undone = rollback(journal, registry=registry)

    assert registry.values == original
    assert registry.writes[-1] == RegistryWrite("set", USER_ENVIRONMENT, "Path", USER_PATH,
                                                REG_EXPAND_SZ)
    assert undone == [rf"restored registry value {USER_ENVIRONMENT}\Path"]
    assert registry.broadcasts == 2


def test_plain_reg_sz_stays_reg_sz_and_comes_back_as_it_was(tmp_path: Path) -> None:
    plain = r"C:\Windows\System32;C:\Tools\bin"
    registry = registry_with(plain, REG_SZ)
    step = UserPathStep(registry)
    journal = apply(step, win_ctx(tmp_path))

    assert registry.get(USER_ENVIRONMENT, "Path") == (
        f"{MINGW_BIN};{CUDA}\\v10.2\\bin;{plain}", REG_SZ)
    rollback(journal, registry=registry)
    assert registry.get(USER_ENVIRONMENT, "Path") == (plain, REG_SZ)


def test_no_user_path_yet_is_created_then_deleted_by_rollback(tmp_path: Path) -> None:
    registry = registry_with(None)
    step = UserPathStep(registry)
    (change,) = step.describe(win_ctx(tmp_path))
    assert change.before is None

    journal = apply(step, win_ctx(tmp_path))
    assert registry.get(USER_ENVIRONMENT, "Path") == (f"{MINGW_BIN};{CUDA}\\v10.2\\bin", REG_SZ)

    rollback(journal, registry=registry)
    assert registry.values == {}
    assert registry.writes[-1] == RegistryWrite("delete", USER_ENVIRONMENT, "Path")


def test_an_arranged_path_is_left_alone(tmp_path: Path) -> None:
    registry = registry_with(ARRANGED)
    step = UserPathStep(registry)
    ctx = win_ctx(tmp_path)
    assert step.describe(ctx) == ()
    step.apply(ctx, Transaction(Journal(ctx.state_dir), step.name))
    assert registry.writes == [] and registry.broadcasts == 0
    assert not (tmp_path / "state").exists()


def test_cuda_bin_comes_from_the_selected_toolkit_tree(tmp_path: Path) -> None:
    root = windows_cuda_tree(tmp_path / "C")
    registry = registry_with(USER_PATH)
    step = UserPathStep(registry)
    apply(step, win_ctx(tmp_path, cuda_root=root))
    entries = split_path(str((registry.get(USER_ENVIRONMENT, "Path") or ("",))[0]))
    ours = str(PureWindowsPath(root) / "bin")  # on Linux the Windows reading of a POSIX path
    assert entries[:2] == [MINGW_BIN, ours]
    assert rf"{CUDA}\v10.2\bin" not in entries and r"%CUDA_PATH_V10_2%\bin" not in entries


def test_a_non_text_path_is_not_touched(tmp_path: Path) -> None:
    registry = RecordingRegistry(values={(USER_ENVIRONMENT, "Path"): (1, 4)})
    with pytest.raises(StepError, match="is not text"):
        UserPathStep(registry).describe(win_ctx(tmp_path))
    assert registry.writes == []


def test_planned_last_and_only_for_a_windows_user_scope(tmp_path: Path) -> None:
    ctx = win_ctx(tmp_path)
    names = [s.name for s in build_steps(ctx, registry=RecordingRegistry())]
    assert names[-2:] == ["activation", "user-path"]
    assert names.index("environment") < names.index("compiler") < names.index("theanorc")

    if sys.platform != "win32":  # there the real registry is planned
        assert "user-path" not in [s.name for s in build_steps(ctx)]
    env_scope = make_ctx(tmp_path, "win-64", compiler=MINGW, artifacts=(COMPILER,),
                         path_scope="env")
    assert "user-path" not in [s.name for s in build_steps(env_scope,
                                                           registry=RecordingRegistry())]


def _reg_query_path() -> str:
    """``reg query`` of the user Path: the registry as another Windows program reads it."""
    import subprocess

    return subprocess.run(["reg", "query", "HKCU\\Environment", "/v", "Path"], check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.skipif(sys.platform != "win32",
                    reason="the real registry: the Windows lane runs it (make test-windows)")
def test_the_real_user_path_is_arranged_then_restored_exactly(tmp_path: Path) -> None:
    registry = WinRegistry()
    saved = registry.get(USER_ENVIRONMENT, "Path")
    try:
        registry.set(USER_ENVIRONMENT, "Path", USER_PATH, REG_EXPAND_SZ)
        journal = apply(UserPathStep(registry), win_ctx(tmp_path))

        assert registry.get(USER_ENVIRONMENT, "Path") == (ARRANGED, REG_EXPAND_SZ)
        assert f"REG_EXPAND_SZ    {ARRANGED}" in _reg_query_path()

        rollback(journal, registry=registry)

        assert registry.get(USER_ENVIRONMENT, "Path") == (USER_PATH, REG_EXPAND_SZ)
        assert f"REG_EXPAND_SZ    {USER_PATH}" in _reg_query_path()
    finally:
        if saved is None:
            registry.delete(USER_ENVIRONMENT, "Path")
        else:
            registry.set(USER_ENVIRONMENT, "Path", *saved)

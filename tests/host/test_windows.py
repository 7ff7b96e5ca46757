"""Windows PATH logic as strings, and the registry through its recording seam."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envforge.errors import StepError
from envforge.host.windows import (
    REG_EXPAND_SZ,
    REG_SZ,
    USER_ENVIRONMENT,
    RecordingRegistry,
    RegistryWrite,
    WinRegistry,
    arrange_path,
    cuda_bin_version,
    expand_vars,
    join_path,
    normalize_entry,
    path_value_type,
    same_entry,
    split_path,
)
from envforge.journal import Journal, Transaction, rollback

CUDA = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v10.2\bin"
CUDA_9 = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v9.0\bin"
MINGW = r"%USERPROFILE%\envs\theano\Library\mingw-w64\bin"
ENV = {"USERPROFILE": r"C:\Users\me", "CUDA_PATH_V10_2": CUDA.removesuffix(r"\bin"),
       "SystemRoot": r"C:\Windows"}


def test_split_and_join() -> None:
    assert split_path(r"C:\a;;C:\b; ;") == [r"C:\a", r"C:\b"]
    assert join_path([r"C:\a", r"%X%\b"]) == r"C:\a;%X%\b"


def test_expand_vars_is_case_insensitive_and_leaves_unknown_names() -> None:
    assert expand_vars(r"%systemroot%\System32;%NOPE%\x", ENV) == r"C:\Windows\System32;%NOPE%\x"


def test_entries_compare_like_windows_does() -> None:
    assert same_entry(r"C:\Tools\Bin\\", r"c:/tools/bin")
    assert same_entry(r'"C:\Program Files\X"', r"C:\PROGRAM FILES\x")
    assert same_entry(r"%CUDA_PATH_V10_2%\bin", CUDA, ENV)
    assert not same_entry(r"%CUDA_PATH_V10_2%\bin", CUDA)  # unknown variable: not expanded
    assert normalize_entry("C:\\") == "c:\\"


def test_cuda_bins_are_recognised_with_their_version() -> None:
    assert cuda_bin_version(CUDA) == "10.2"
    assert cuda_bin_version(r"%CUDA_PATH_V9_0%\bin") == "9.0"
    assert cuda_bin_version(r"%CUDA_PATH%\bin") == "?"
    cuda_9_root = {"CUDA_PATH": CUDA_9.removesuffix(r"\bin")}
    assert cuda_bin_version(r"%CUDA_PATH%\bin", cuda_9_root) == "9.0"
    assert cuda_bin_version(r"C:\Program Files\NVIDIA Corporation\NVSMI") is None


def test_mingw_first_then_exactly_one_cuda_bin() -> None:
    before = join_path([r"C:\Windows\system32", CUDA.upper(), r"%CUDA_PATH_V10_2%\bin",
                        r"C:\Strawberry\c\bin", MINGW, r"%SystemRoot%"])
    edit = arrange_path(before, mingw_bin=MINGW, cuda_bin=CUDA, environ=ENV)
    assert edit.changed
    assert split_path(edit.value) == [MINGW, CUDA, r"C:\Windows\system32",
                                      r"C:\Strawberry\c\bin", r"%SystemRoot%"]
    assert edit.findings == ()


def test_a_bin_of_our_cuda_version_spelled_otherwise_is_a_duplicate() -> None:
    before = join_path([r"%CUDA_PATH_V10_2%\bin", r"D:\CUDA\v10.2\bin", r"C:\Windows"])
    edit = arrange_path(before, cuda_bin=CUDA)  # no environment: variables stay unexpanded
    assert split_path(edit.value) == [CUDA, r"C:\Windows"]
    assert edit.findings == ()


def test_other_cuda_versions_are_reported_and_kept_after_ours() -> None:
    before = join_path([CUDA_9, r"%CUDA_PATH%\bin", r"C:\Windows"])
    edit = arrange_path(before, cuda_bin=CUDA, environ=ENV)
    assert split_path(edit.value) == [CUDA, CUDA_9, r"%CUDA_PATH%\bin", r"C:\Windows"]
    assert edit.findings == (
        f"PATH also holds {CUDA_9} (CUDA 9.0); it comes after {CUDA}",
        rf"PATH also holds %CUDA_PATH%\bin (CUDA of unknown version); it comes after {CUDA}",
    )
    removed = arrange_path(before, cuda_bin=CUDA, environ=ENV, remove_other_cuda=True)
    assert split_path(removed.value) == [CUDA, r"C:\Windows"]
    assert removed.findings[0] == f"removed {CUDA_9} from PATH (CUDA 9.0)"


def test_arranging_is_idempotent_byte_for_byte() -> None:
    before = r"C:\Windows;%SystemRoot%\System32;" + CUDA_9 + ";"
    first = arrange_path(before, mingw_bin=MINGW, cuda_bin=CUDA, environ=ENV)
    second = arrange_path(first.value, mingw_bin=MINGW, cuda_bin=CUDA, environ=ENV)
    assert not second.changed
    assert second.value == first.value
    assert second.findings == first.findings
    assert "%SystemRoot%" in first.value and "%USERPROFILE%" in first.value  # kept unexpanded
    arranged = MINGW + ";" + CUDA + ";C:\\Windows;"
    assert arrange_path(arranged, mingw_bin=MINGW, cuda_bin=CUDA).value == arranged


def test_value_type_keeps_expansion() -> None:
    assert path_value_type(r"C:\a", REG_EXPAND_SZ) == REG_EXPAND_SZ
    assert path_value_type(r"%USERPROFILE%\a", REG_SZ) == REG_EXPAND_SZ
    assert path_value_type(r"C:\a", REG_SZ) == REG_SZ
    assert path_value_type(r"C:\a", None) == REG_SZ


def test_recording_registry_records_and_folds_names() -> None:
    registry = RecordingRegistry({(USER_ENVIRONMENT, "Path"): ("C:\\a", REG_EXPAND_SZ)})
    assert registry.get(r"HKCU\Environment", "PATH") == ("C:\\a", REG_EXPAND_SZ)
    registry.set(r"HKCU\Environment", "Path", "C:\\b", REG_EXPAND_SZ)
    registry.delete(r"HKCU\Environment", "Missing")
    assert registry.writes == [
        RegistryWrite("set", r"HKCU\Environment", "Path", "C:\\b", REG_EXPAND_SZ),
        RegistryWrite("delete", r"HKCU\Environment", "Missing"),
    ]
    assert registry.get(USER_ENVIRONMENT, "path") == ("C:\\b", REG_EXPAND_SZ)


@pytest.mark.skipif(sys.platform == "win32", reason="checks the refusal off Windows")
def test_real_registry_is_refused_off_windows() -> None:
    with pytest.raises(StepError, match="only be changed on Windows"):
        WinRegistry()


def test_user_path_edit_through_the_journal_and_back(tmp_path: Path) -> None:
    old = r"%USERPROFILE%\AppData\Local\Microsoft\WindowsApps;" + CUDA_9
    registry = RecordingRegistry({(USER_ENVIRONMENT, "Path"): (old, REG_EXPAND_SZ)})
    current = registry.get(USER_ENVIRONMENT, "Path")
    assert current is not None
    edit = arrange_path(str(current[0]), mingw_bin=MINGW, cuda_bin=CUDA, environ=ENV)
    journal = Journal(tmp_path / "state")
    tx = Transaction(journal, "path")
    tx.set_registry_value(registry, USER_ENVIRONMENT, "Path", edit.value,
                          path_value_type(edit.value, current[1]))
    assert registry.get(USER_ENVIRONMENT, "Path") == (edit.value, REG_EXPAND_SZ)

    rollback(Journal(tmp_path / "state"), registry=registry)
    assert registry.get(USER_ENVIRONMENT, "Path") == (old, REG_EXPAND_SZ)
    assert registry.writes[-1] == RegistryWrite("set", USER_ENVIRONMENT, "Path", old,
                                                REG_EXPAND_SZ)
    assert registry.broadcasts == 1

"""Which CUDA a process gets: runtimes on the search path, CUDA_* variables, cuda.root."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envforge.doctor.rules.cuda import runtime_version
from envforge.host.windows import USER_ENVIRONMENT, RecordingRegistry
from envforge.platforms import Platform
from tests.doctor.layouts import (
    expected,
    gxx,
    gxx_mingw,
    home,
    ids,
    judge,
    linux_cuda,
    look,
    only,
    windows_cuda,
)


def _set_value(fix: str) -> str:
    """The value a ``set "NAME=value"`` / ``export NAME=value`` fix gives."""
    match = re.fullmatch(r'set "\w+=(.*)"', fix) or re.fullmatch(r"export \w+='?(.*?)'?", fix)
    assert match, fix
    return match[1]


def test_windows_putting_the_right_cuda_first_is_undone_by_theano(tmp_path: Path) -> None:
    # The user followed the old advice: CUDA 10.2 first on PATH. Theano's dnn import
    # re-sorts PATH (lower-cased), and C:\...\A\... sorts before ...\Program Files\...
    old = windows_cuda(tmp_path / "A", "9.0")
    new = windows_cuda(tmp_path / "Program Files", "10.2")
    env = {"PATH": f"{new / 'bin'};{old / 'bin'};C:\\Windows", "CUDA_PATH": str(new),
           "USERPROFILE": str(home(tmp_path))}

    finding = only(judge(look(tmp_path, env, platform="win-64"),
                         expected(platform="win-64")), "cuda.several-on-path")

    assert finding.severity == "error"
    assert "after Theano's PATH rewrite (sorted, lower-cased) CUDA 9.0's runtime" in finding.title
    assert [e.text.split("  ")[1] for e in finding.evidence] == [
        "(cudart64_90.dll: CUDA 9.0)", "(cudart64_102.dll: CUDA 10.2)"]
    assert "theano/pathparse.py" in finding.source
    assert finding.fix is not None and not finding.fix.safe
    env["PATH"] = _set_value(finding.fix.text)
    # The fix does not depend on order: the other CUDA is gone, nothing else moved.
    assert env["PATH"] == f"{new / 'bin'};C:\\Windows"
    assert "cuda.several-on-path" not in ids(judge(look(tmp_path, env, platform="win-64"),
                                                   expected(platform="win-64")))


def test_the_order_after_a_rewrite_is_the_one_its_pack_computed(tmp_path: Path) -> None:
    """The core sorts nothing itself: it reads the order the rewriting framework's pack
    gives (``FrameworkConfig.path_order``). Leaving PATH as the user wrote it puts CUDA 10.2
    first here, where Theano's sort put 9.0 first (the test above)."""
    old = windows_cuda(tmp_path / "A", "9.0")
    new = windows_cuda(tmp_path / "Program Files", "10.2")
    env = {"PATH": f"{new / 'bin'};{old / 'bin'};C:\\Windows", "CUDA_PATH": str(new),
           "USERPROFILE": str(home(tmp_path))}
    facts = look(tmp_path, env, platform="win-64")
    theano = facts.frameworks["theano"]
    assert theano.path_order == (1, 0, 2)  # Theano's: lower-cased and sorted
    as_written = theano.model_copy(update={"path_order": (0, 1, 2)})
    facts = facts.model_copy(update={"frameworks": {**facts.frameworks, "theano": as_written}})
    finding = only(judge(facts, expected(platform="win-64")), "cuda.several-on-path")
    assert finding.severity == "warning"
    assert "sorts first once Theano rewrites PATH" in finding.title


def test_windows_right_cuda_sorting_first_is_only_luck(tmp_path: Path) -> None:
    program_files = tmp_path / "Program Files"
    old, new = windows_cuda(program_files, "9.0"), windows_cuda(program_files, "10.2")
    env = {"PATH": f"{old / 'bin'};{new / 'bin'};C:\\Windows", "CUDA_PATH": str(new),
           "USERPROFILE": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env, platform="win-64"),
                         expected(platform="win-64")), "cuda.several-on-path")
    assert finding.severity == "warning"
    assert "sorts first once Theano rewrites PATH" in finding.title
    assert finding.fix is not None
    assert _set_value(finding.fix.text) == f"{new / 'bin'};C:\\Windows"


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_linux_several_runtimes_without_a_lock(tmp_path: Path) -> None:
    a, b = linux_cuda(tmp_path, "10.2.89"), linux_cuda(tmp_path, "12.4.99")
    env = {"LD_LIBRARY_PATH": f"{b / 'lib64'}:{a / 'lib64'}", "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env)), "cuda.several-on-path")
    assert finding.severity == "warning"
    assert finding.title == ("LD_LIBRARY_PATH holds 2 CUDA runtimes (12, 10.2); the first, "
                             "CUDA 12, wins")
    env["LD_LIBRARY_PATH"] = str(b / "lib64")
    assert "cuda.several-on-path" not in ids(judge(look(tmp_path, env)))


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_cuda_variables_disagree(tmp_path: Path) -> None:
    a, b = linux_cuda(tmp_path, "10.2.89"), linux_cuda(tmp_path, "11.8.89")
    env = {"CUDA_PATH": str(a), "CUDA_HOME": str(b), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env)), "cuda.variables")
    assert finding.severity == "warning"
    assert [e.where for e in finding.evidence] == ["CUDA_PATH", "CUDA_HOME"]
    # with the lock, the variable Theano reads naming the wrong toolkit is an error
    env = {"CUDA_ROOT": str(b), "CUDA_PATH": str(a), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env), expected()), "cuda.variables")
    assert finding.severity == "error"
    assert finding.fix is not None
    assert finding.fix.text == f"export CUDA_ROOT={a}"
    env["CUDA_ROOT"] = str(a)
    assert "cuda.variables" not in ids(judge(look(tmp_path, env), expected()))


def test_cuda_variable_naming_nothing(tmp_path: Path) -> None:
    env = {"CUDA_PATH": str(tmp_path / "gone"), "HOME": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env)), "cuda.variables")
    assert finding.title.endswith("which does not exist")


def test_locked_cuda_not_installed(tmp_path: Path) -> None:
    linux_cuda(tmp_path / "local", "13.0.88")
    facts = look(tmp_path, {"HOME": str(home(tmp_path))}, cuda_search=(tmp_path / "local",))
    finding = only(judge(facts, expected()), "cuda.not-found")
    assert "13.0.88" in finding.title
    linux_cuda(tmp_path / "local", "10.2.89")
    facts = look(tmp_path, {"HOME": str(home(tmp_path))}, cuda_search=(tmp_path / "local",))
    assert "cuda.not-found" not in ids(judge(facts, expected()))


def test_shell_older_than_the_registry_path(tmp_path: Path) -> None:
    mingw = tmp_path / "mingw64" / "bin"
    gxx(mingw, gxx_mingw("posix"), name="g++.exe")
    registry = RecordingRegistry({(USER_ENVIRONMENT, "Path"): (str(mingw), 2)})
    env = {"PATH": r"C:\Windows", "USERPROFILE": str(home(tmp_path))}
    finding = only(judge(look(tmp_path, env, platform="win-64", registry=registry)),
                   "path.stale-shell")
    assert finding.evidence[0].text == str(mingw)
    env["PATH"] = f"C:\\Windows;{mingw}"  # what a new terminal gets
    assert "path.stale-shell" not in ids(judge(look(tmp_path, env, platform="win-64",
                                                    registry=registry)))


@pytest.mark.parametrize(("name", "platform", "version"), [
    ("cudart64_80.dll", "win-64", "8.0"), ("cudart64_90.dll", "win-64", "9.0"),
    ("cudart64_102.dll", "win-64", "10.2"), ("CUDART64_110.DLL", "win-64", "11"),
    ("cudart64_12.dll", "win-64", "12"), ("libcudart.so.10.2", "linux-64", "10.2"),
    ("libcudart.so.10.2.89", "linux-64", "10.2"), ("libcudart.so.11.0", "linux-64", "11"),
    ("libcudart.so.13", "linux-64", "13"), ("libcudart.so", "linux-64", None),
    ("cudart64_102.dll", "linux-64", None)])
def test_runtime_versions(name: str, platform: Platform, version: str | None) -> None:
    """cudart64_110.dll and libcudart.so.11.0 serve every CUDA 11 release."""
    assert runtime_version(name, platform) == version

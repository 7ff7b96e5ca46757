"""The no-op apply's cheap real check on a real theano-cpu environment: in sync after the
real path found nothing to do, whatever the folder, the unrelated variables or the use of
the environment; every drift the real path decides on makes it fall through."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from envforge import __version__
from envforge.cli import main
from envforge.host import noopcheck, noopstamp
from tests.testing.homes import home_sharing
from tests.testing.imports import imported_after

REPO = Path(__file__).resolve().parents[2]
Undo = Callable[[], object]


@pytest.mark.parametrize("words", [
    ["apply", "s.toml", "--yes"], ["apply", "-y", "s.toml", "-q", "--offline"],
    ["apply", "s.toml", "--yes", "--prefix", "p", "--locks-dir=l"]])
def test_parse_takes_the_plain_no_op_words(words: list[str]) -> None:
    found = noopcheck.parse(words)
    assert found is not None and found["spec"] == "s.toml"


@pytest.mark.parametrize("words", [
    ["apply", "s.toml"], ["apply", "s.toml", "--yes", "--sync"],
    ["apply", "s.toml", "--yes", "--json"], ["apply", "s.toml", "--yes", "--bundle", "b"],
    ["apply", "s.toml", "t.toml", "--yes"], ["apply", "s.toml", "--yes", "--prefix"],
    ["apply", "s.toml", "-yq"], ["apply", "s.toml", "--yes", "--prefix", "a", "--prefix", "b"],
    ["status"], ["plan", "s.toml", "--yes"]])
def test_parse_leaves_anything_else_to_the_real_path(words: list[str]) -> None:
    assert noopcheck.parse(words) is None


def test_the_check_imports_nothing_heavy() -> None:
    code = ("import os\nfrom envforge.host.noopcheck import try_check\n"
            "try_check(['apply', 'nothing.toml', '-y'], cwd=os.getcwd(), environ=os.environ,"
            " version='0')")
    assert imported_after(code, ["pydantic", "rich", "envforge.spec", "envforge.commands",
                                 "argparse", "hashlib", "subprocess"]) == []


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory,
            shared_cache: Path) -> Iterator[dict[str, Path]]:
    """theano-cpu applied once from a copy of the project (edited below)."""
    root = tmp_path_factory.mktemp("noopcheck")
    for folder, name in (("specs", "theano-cpu.toml"), ("locks", "theano-cpu.lock")):
        (root / folder).mkdir()
        shutil.copy2(REPO / folder / name, root / folder / name)
    home = root / "home"
    home.mkdir()
    envforge_home = home_sharing(root / "envforge-home", shared_cache)
    saved = dict(os.environ)
    os.environ.update({"ENVFORGE_HOME": str(envforge_home), "HOME": str(home),
                       "PYENV_ROOT": saved.get("PYENV_ROOT", str(Path.home() / ".pyenv"))})
    prefix = envforge_home / "data" / "envs" / "theano-cpu"
    spec = root / "specs" / "theano-cpu.toml"
    try:
        assert main(["apply", str(spec), "--yes"]) == 0
        yield {"root": root, "spec": spec, "lock": root / "locks" / "theano-cpu.lock",
               "prefix": prefix, "site": prefix / "lib" / "python3.7" / "site-packages",
               "state": next((envforge_home / "state").iterdir())}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _words(files: dict[str, Path], *more: str) -> list[str]:
    return ["apply", str(files["spec"]), "--yes", *more]


def _lean(files: dict[str, Path], *more: str, cwd: Path | None = None,
          spec: str | None = None) -> bool:
    words = _words(files, *more) if spec is None else ["apply", spec, "--yes", *more]
    return noopcheck.check(words, cwd=str(cwd or Path.cwd()), environ=os.environ,
                           version=__version__) is not None


def _settle(files: dict[str, Path], *more: str) -> None:
    """The real path, past the racy window of the last writes, finds nothing to do and
    records; no stamp or record left to answer for it."""
    time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)
    # these words' stamp and record only: the cache is the run's, another test keeps its own
    words, cwd = _words(files, *more), str(Path.cwd())
    noopstamp.stamp_path(words, cwd=cwd, environ=os.environ,
                         version=__version__).unlink(missing_ok=True)
    invocation = noopcheck.parse(words)
    assert invocation is not None
    Path(noopcheck.record_path(invocation, cwd=cwd, environ=os.environ,
                               version=__version__)).unlink(missing_ok=True)
    # make test's other workers write into the run's shared cache, which the record rests
    # on: a write of theirs within the racy window keeps the real path from saving a record
    # (as it must); past the window, the next real-path apply saves it
    for _ in range(3):
        assert main(_words(files, *more)) == 0
        if _lean(files, *more):
            return
        time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)
    assert _lean(files, *more)



@pytest.mark.slow
@pytest.mark.network
def test_in_sync_after_apply_wherever_and_however_it_is_run(
        applied: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _settle(applied)
    monkeypatch.setenv("ENVFORGE_BENCH_ROUND", "7")  # no stamp holds now: the check answers
    assert noopstamp.try_noop(_words(applied), cwd=str(Path.cwd()), environ=os.environ,
                              version=__version__) is None
    capsys.readouterr()
    assert main(_words(applied)) == 0
    assert capsys.readouterr().err.strip() == (
        f"{applied['spec']}: nothing to do ({applied['prefix']})")
    # ... and stamped these words: the next run takes the stamp
    assert noopstamp.try_noop(_words(applied), cwd=str(Path.cwd()), environ=os.environ,
                              version=__version__) == 0

    # in a process of its own: answered without planning's modules
    code = (f"import sys\nfrom envforge.cli import main\nassert main({_words(applied)!r}) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'rich', "
            "'envforge.spec', 'envforge.commands', 'argparse'))))")
    monkeypatch.setenv("ENVFORGE_BENCH_ROUND", "8")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"
    assert done.stderr.strip() == f"{applied['spec']}: nothing to do ({applied['prefix']})"

    # another folder, the spec named relative to it
    assert _lean(applied, cwd=applied["root"], spec="specs/theano-cpu.toml")
    # variables the plan does not read
    monkeypatch.setenv("THEANO_FLAGS", "device=cuda")
    monkeypatch.setenv("TERM_SESSION_ID", "another shell")
    assert _lean(applied)
    # the lock and a managed file rewritten with the same bytes: compared by content
    applied["lock"].write_bytes(applied["lock"].read_bytes())
    rc = applied["prefix"] / "etc" / "theanorc"
    rc.write_bytes(rc.read_bytes())
    assert _lean(applied)
    # the environment used: Python's bytecode, uv's .lock in the prefix
    python = applied["prefix"] / "bin" / "python"
    writes = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    shutil.rmtree(applied["site"] / "__pycache__", ignore_errors=True)
    subprocess.run([str(python), "-c", "import six, numpy"], check=True, env=writes)
    assert (applied["site"] / "__pycache__").is_dir()
    (applied["prefix"] / ".lock").write_text("")
    assert _lean(applied)


@pytest.mark.slow
@pytest.mark.network
def test_another_environment_of_the_same_packages_keeps_the_record_and_the_stamp(
        applied: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel's ``*.dist-info`` files and a Debian package's files are hard links into the
    cache: another environment's apply or rollback of the same package makes or removes a
    link, which moves their ctime (make test's other workers did, and the record was never
    saved). No step reads them, so neither the record nor the stamp rests on them."""
    _settle(applied)
    monkeypatch.setenv("ENVFORGE_BENCH_ROUND", "9")
    assert main(_words(applied)) == 0  # stamps these words
    shared = [next(applied["site"].glob("six-*.dist-info")) / "METADATA",
              next(p for p in (applied["prefix"] / "deb" / "usr").rglob("*")
                   if p.is_file() and not p.is_symlink())]
    assert all(p.stat().st_nlink > 1 for p in shared)  # linked from the cache
    other = tmp_path / "other-environment"
    other.mkdir()
    time.sleep(noopstamp.RACY_NS / 1e9 + 0.1)
    for n, path in enumerate(shared):
        os.link(path, other / str(n))  # as the other environment's apply does
    assert _lean(applied)
    assert noopstamp.try_noop(_words(applied), cwd=str(Path.cwd()), environ=os.environ,
                              version=__version__) == 0
    for n in range(len(shared)):
        (other / str(n)).unlink()  # its rollback
    assert _lean(applied)


def _edit(path: Path, new: bytes) -> Undo:
    old = path.read_bytes()
    path.write_bytes(new)
    return lambda: path.write_bytes(old)


def _append(path: Path, text: str) -> Undo:
    return _edit(path, path.read_bytes() + text.encode())


def _move(src: Path, dst: Path) -> Undo:
    src.rename(dst)
    return lambda: dst.rename(src)


OWN = "own-module.py"  # stands for a module of envforge (test_every_drift_...)


def _drifts(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
            tmp: Path) -> dict[str, Callable[[], Undo]]:
    """Each drift the real path decides on: made, it returns its undoing."""
    prefix, site, state = files["prefix"], files["site"], files["state"]
    six = site / "six-1.16.0.dist-info"

    def env(name: str, value: str) -> Undo:
        monkeypatch.setenv(name, value)
        return lambda: monkeypatch.undo()

    def added() -> Undo:
        extra = site / "extra-1.0.dist-info"
        extra.mkdir()
        (extra / "RECORD").write_text("")
        return lambda: shutil.rmtree(extra)

    def interpreter() -> Undo:
        link = prefix / "bin" / "python"
        target = link.readlink()
        other = tmp / "python3.7"
        shutil.copy2(os.path.realpath(link), other)
        link.unlink()
        link.symlink_to(other)

        def undo() -> None:
            link.unlink()
            link.symlink_to(target)
        return undo

    def held() -> Undo:
        import fcntl  # POSIX only: the module's quick tests run in the Windows lane too

        fd = os.open(state / "apply.lock", os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return lambda: os.close(fd)

    def own() -> Undo:
        os.utime(tmp / OWN)  # its ctime moves: envforge may decide differently
        return lambda: None

    def fifo() -> Undo:
        spec = files["spec"]
        spec.rename(tmp / spec.name)
        os.mkfifo(spec)  # opened for its digest, it would wait for a writer forever

        def undo() -> None:
            spec.unlink()
            (tmp / spec.name).rename(spec)
        return undo

    def marker() -> Undo:
        found = next((prefix / "deb" / ".envforge-debs").iterdir())
        return _move(found, found.with_name("aside"))

    return {
        "lock edited": lambda: _append(files["lock"], "# edited\n"),
        "spec edited": lambda: _edit(files["spec"], files["spec"].read_bytes().replace(
            b"allow_gc = true", b"allow_gc = false")),
        "spec replaced by a FIFO": fifo,
        "config edited": lambda: _edit(prefix / "etc" / "theanorc", b"[global]\ndevice=cuda\n"),
        "config removed": lambda: _move(prefix / "etc" / "theanorc", tmp / "theanorc"),
        "activation edited": lambda: _append(prefix / "bin" / "activate", "# mine\n"),
        "variables file edited": lambda: _append(prefix / "envforge-env.json", " "),
        "pyvenv.cfg edited": lambda: _edit(prefix / "pyvenv.cfg", b"home = /nowhere\n"),
        "dist removed": lambda: _move(six, tmp / six.name),
        "dist at another version": lambda: _move(six, site / "six-1.15.0.dist-info"),
        "dist half installed (no RECORD)": lambda: _move(six / "RECORD", tmp / "RECORD"),
        "dist added": added,
        "interpreter changed": interpreter,
        "Debian package's marker removed": marker,
        "record incomplete": lambda: _edit(state / "applied.json", (
            state / "applied.json").read_bytes().replace(b'"complete": true',
                                                          b'"complete": false')),
        "journal appended": lambda: _append(state / "journal.jsonl", "\n"),
        "another apply holds the prefix": held,
        "envforge changed": own,
        "HOME changed": lambda: env("HOME", str(tmp)),
        "PATH changed": lambda: env("PATH", f"{tmp}{os.pathsep}{os.environ['PATH']}"),
        "ENVFORGE_HOME changed": lambda: env("ENVFORGE_HOME", str(tmp)),
    }


@pytest.mark.slow
@pytest.mark.network
def test_every_drift_falls_through_to_the_real_path(
        applied: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # One of envforge's own files, as the stamp and the record list them, that only this
    # test touches: a module of the checkout itself touched here voided every stamp of the
    # tests running beside this one (test_apply_noop's, in make test's parallel run).
    (tmp_path / OWN).write_text("\n")
    real = noopstamp.own_files
    monkeypatch.setattr(noopstamp, "own_files", lambda: [*real(), str(tmp_path / OWN)])
    _settle(applied)
    for name, make in _drifts(applied, monkeypatch, tmp_path).items():
        undo = make()
        try:
            assert not _lean(applied), f"{name}: the check said in sync"
        finally:
            undo()
        if name == "envforge changed":
            _settle(applied)
        else:
            assert _lean(applied), f"{name} undone: the check is still not sure"


@pytest.mark.slow
@pytest.mark.network
def test_a_g_plus_plus_added_earlier_on_path_falls_through(
        applied: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    early = tmp_path / "bin"
    early.mkdir()
    monkeypatch.setenv("PATH", f"{early}{os.pathsep}{os.environ['PATH']}")
    _settle(applied)
    (early / "g++").write_text("#!/bin/sh\necho 4.8.5\n")
    (early / "g++").chmod(0o755)
    assert not _lean(applied)


@pytest.mark.slow
@pytest.mark.network
def test_offline_falls_through_when_a_cache_file_it_hashed_changes(
        applied: dict[str, Path]) -> None:
    _settle(applied, "--offline")
    locked = tomllib.loads(applied["lock"].read_text(encoding="utf-8"))
    six = next(row for row in locked["platforms"]["linux-64"]["pypi"]
               if row["filename"].startswith("six-"))
    # the locked wheel's entry (the run's shared cache holds other releases of six too)
    archive = (Path(os.environ["ENVFORGE_HOME"]) / "cache" / "files" / six["sha256"][:2]
               / six["sha256"] / six["filename"])
    assert archive.is_file()
    before = archive.stat()
    os.utime(archive)  # its ctime moves, as any rewrite's does
    try:
        assert not _lean(applied, "--offline")
    finally:
        # the cache is the run's, shared with the next run: its mtime back (settled) and an
        # apply that hashes it again, which records the new stat beside it
        # (``fetch._CheckedRecord``); left stale, the next run's first real-path apply
        # wrote that record into the entry's folder, within the racy window of its own
        # no-op record, and saved none (``noopcheck.save``): every other run's first
        # ``_settle`` failed
        os.utime(archive, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert main(_words(applied, "--offline")) == 0

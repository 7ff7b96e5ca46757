"""The cuDNN step on archives in NVIDIA's real layouts and CUDA-shaped trees built here."""

from __future__ import annotations

import hashlib
import io
import os
import random
import re
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from envforge.errors import ArtifactError, StepError
from envforge.journal import Journal, Transaction, rollback
from envforge.lockfile import LockedArtifact
from envforge.steps.base import StepContext
from envforge.steps.cudnn import CudnnInstallStep, cudnn_header_version
from tests.testing.contexts import apply_step, make_ctx
from tests.testing.trees import snapshot

REPO = Path(__file__).resolve().parents[2]


def cudnn_header(major: int, minor: int, patch: int) -> bytes:
    return textwrap.dedent(f"""\
        /* cudnn : Neural Networks Library */
        #if !defined(CUDNN_H_)
        #define CUDNN_H_

        #define CUDNN_MAJOR {major}
        #define CUDNN_MINOR {minor}
        #define CUDNN_PATCHLEVEL {patch}

        #define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
        #endif /* CUDNN_H_ */
        """).encode()


def linux_cudnn_tgz(path: Path, *, static_size: int = 4096, extra: tuple[tarfile.TarInfo,
                    ...] = ()) -> Path:
    """cudnn-10.2-linux-x64-v7.6.5.32.tgz's layout: a library, two links, a static archive."""
    def add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))

    def add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
        tar.addfile(info)

    with tarfile.open(path, "w:gz") as tar:
        for folder in ("cuda", "cuda/include", "cuda/lib64"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        add_file(tar, "cuda/include/cudnn.h", cudnn_header(7, 6, 5), 0o444)
        add_file(tar, "cuda/NVIDIA_SLA_cuDNN_Support.txt", b"license\n", 0o444)
        add_file(tar, "cuda/lib64/libcudnn.so.7.6.5", b"\x7fELF cudnn 7.6.5" * 64, 0o755)
        add_link(tar, "cuda/lib64/libcudnn.so.7", "libcudnn.so.7.6.5")
        add_link(tar, "cuda/lib64/libcudnn.so", "libcudnn.so.7")
        add_file(tar, "cuda/lib64/libcudnn_static.a", os.urandom(static_size), 0o644)
        for info in extra:
            tar.addfile(info, io.BytesIO(b"x" * info.size))
    return path


def windows_cudnn_zip(path: Path) -> Path:
    """cudnn-10.2-windows10-x64-v7.6.5.32.zip's layout, as written on Windows (no unix modes)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in (("cuda/bin/cudnn64_7.dll", b"MZ cudnn64_7" * 64),
                           ("cuda/include/cudnn.h", cudnn_header(7, 6, 5)),
                           ("cuda/lib/x64/cudnn.lib", b"!<arch> import lib"),
                           ("cuda/NVIDIA_SLA_cuDNN_Support.txt", b"license")):
            info = zipfile.ZipInfo(name, date_time=(2019, 11, 1, 0, 0, 0))
            info.create_system = 0
            zf.writestr(info, data)
    return path


def linux_cuda_tree(base: Path) -> Path:
    """``/usr/local/cuda-10.2`` with an older cuDNN 7.4.2 header already installed."""
    root = base / "usr" / "local" / "cuda-10.2"
    for folder in ("bin", "include", "lib64", "nvvm"):
        (root / folder).mkdir(parents=True)
    (root / "version.txt").write_text("CUDA Version 10.2.89\n")
    (root / "bin" / "nvcc").write_bytes(b"\x7fELF nvcc")
    (root / "bin" / "nvcc").chmod(0o755)
    (root / "include" / "cuda.h").write_text("#define CUDA_VERSION 10020\n")
    (root / "include" / "cudnn.h").write_bytes(cudnn_header(7, 4, 2))
    (root / "include" / "cudnn.h").chmod(0o644)
    (root / "lib64" / "libcudart.so.10.2.89").write_bytes(b"\x7fELF cudart")
    (root / "lib64" / "libcudart.so.10.2").symlink_to("libcudart.so.10.2.89")
    return root


def windows_cuda_tree(base: Path) -> Path:
    r"""``C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v10.2`` as real folders."""
    root = base / "Program Files" / "NVIDIA GPU Computing Toolkit" / "CUDA" / "v10.2"
    for folder in ("bin", "include", "lib/x64"):
        (root / folder).mkdir(parents=True)
    (root / "version.txt").write_text("CUDA Version 10.2.89\n")
    (root / "bin" / "cudart64_102.dll").write_bytes(b"MZ cudart")
    (root / "bin" / "nvrtc64_102_0.dll").write_bytes(b"MZ nvrtc 10.2")
    (root / "bin" / "cublas64_10.dll").write_bytes(b"MZ cublas 10")
    (root / "include" / "cuda.h").write_text("#define CUDA_VERSION 10020\n")
    (root / "lib" / "x64" / "cudart.lib").write_bytes(b"!<arch> cudart")
    return root


def locked(archive: Path, sha256: str | None = None) -> LockedArtifact:
    digest = sha256 or hashlib.sha256(archive.read_bytes()).hexdigest()
    return LockedArtifact(role="cudnn", filename=archive.name, sha256=digest,
                          source="user download", user_supplied=True)


def apply(step: CudnnInstallStep, ctx: StepContext) -> Journal:
    return apply_step(step, ctx)


def test_header_version() -> None:
    assert cudnn_header_version(cudnn_header(7, 6, 5).decode()) == (7, 6, 5)
    assert cudnn_header_version("#define CUDNN_MAJOR 7\n") is None


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_linux_archive_installs_into_lib64_with_links_kept(tmp_path: Path) -> None:
    root = linux_cuda_tree(tmp_path / "host")
    old_header = (root / "include" / "cudnn.h").read_bytes()
    archive = linux_cudnn_tgz(tmp_path / "cudnn-10.2-linux-x64-v7.6.5.32.tgz")
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    step = CudnnInstallStep(locked(archive))

    changes = step.describe(ctx)
    by_target = {c.target: c for c in changes}
    assert sorted(Path(t).relative_to(root).as_posix() for t in by_target) == [
        "include/cudnn.h", "lib64/libcudnn.so", "lib64/libcudnn.so.7", "lib64/libcudnn.so.7.6.5",
        "lib64/libcudnn_static.a"]
    header = by_target[str(root / "include" / "cudnn.h")]
    assert header.action == "replace"
    assert header.before == f"sha256:{hashlib.sha256(old_header).hexdigest()}"
    assert header.after == f"sha256:{hashlib.sha256(cudnn_header(7, 6, 5)).hexdigest()}"
    link = by_target[str(root / "lib64" / "libcudnn.so")]
    assert (link.action, link.before, link.after) == ("link", None, "libcudnn.so.7")
    assert by_target[str(root / "lib64" / "libcudnn.so.7.6.5")].action == "create"

    apply(step, ctx)

    assert (root / "include" / "cudnn.h").read_bytes() == cudnn_header(7, 6, 5)
    assert (root / "lib64" / "libcudnn.so").readlink() == Path("libcudnn.so.7")
    assert (root / "lib64" / "libcudnn.so.7").readlink() == Path("libcudnn.so.7.6.5")
    assert (root / "lib64" / "libcudnn.so").read_bytes().startswith(b"\x7fELF cudnn 7.6.5")
    assert (root / "lib64" / "libcudnn.so.7.6.5").stat().st_mode & 0o777 == 0o755
    assert not (root / "NVIDIA_SLA_cuDNN_Support.txt").exists()
    assert step.describe(ctx) == ()


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_second_apply_changes_nothing(tmp_path: Path) -> None:
    root = linux_cuda_tree(tmp_path / "host")
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz")
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    step = CudnnInstallStep(locked(archive))
    journal = apply(step, ctx)
    after_first = snapshot(root)
    entries_after_first = len(journal.entries())

    apply(step, ctx)

    assert snapshot(root) == after_first
    added = [e.op for e in Journal(ctx.state_dir).entries()[entries_after_first:]]
    assert added == ["step-begin", "step-done"]


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_same_bytes_with_the_wrong_mode_is_a_change(tmp_path: Path) -> None:
    root = linux_cuda_tree(tmp_path / "host")
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz")
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    step = CudnnInstallStep(locked(archive))
    apply(step, ctx)
    library = root / "lib64" / "libcudnn.so.7.6.5"
    library.chmod(0o644)

    changes = step.describe(ctx)
    assert [(c.target, c.action, c.detail) for c in changes] == [
        (str(library), "replace", "mode 644 -> 755")]
    apply(step, ctx)
    assert library.stat().st_mode & 0o777 == 0o755
    assert step.describe(ctx) == ()


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_rollback_restores_the_old_header_and_removes_the_rest(tmp_path: Path) -> None:
    root = linux_cuda_tree(tmp_path / "host")
    before = snapshot(root)
    old_header = (root / "include" / "cudnn.h").read_bytes()
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz")
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    journal = apply(CudnnInstallStep(locked(archive)), ctx)

    undone = rollback(journal)

    assert snapshot(root) == before
    assert (root / "include" / "cudnn.h").read_bytes() == old_header
    assert f"restored {root / 'include' / 'cudnn.h'}" in undone
    assert f"removed {root / 'lib64' / 'libcudnn.so.7.6.5'}" in undone


def test_windows_zip_installs_into_a_windows_shaped_tree(tmp_path: Path) -> None:
    root = windows_cuda_tree(tmp_path / "C")
    before = snapshot(root)
    archive = windows_cudnn_zip(tmp_path / "cudnn-10.2-windows10-x64-v7.6.5.32.zip")
    ctx = make_ctx(tmp_path, "win-64", root, {"cudnn": archive})
    step = CudnnInstallStep(locked(archive))

    assert {Path(c.target).relative_to(root).as_posix() for c in step.describe(ctx)} == {
        "bin/cudnn64_7.dll", "include/cudnn.h", "lib/x64/cudnn.lib"}
    journal = apply(step, ctx)
    assert (root / "bin" / "cudnn64_7.dll").read_bytes() == b"MZ cudnn64_7" * 64
    assert (root / "lib" / "x64" / "cudnn.lib").read_bytes() == b"!<arch> import lib"
    assert step.describe(ctx) == ()

    rollback(journal)
    assert snapshot(root) == before


def test_archive_for_the_other_platform_is_refused(tmp_path: Path) -> None:
    root = windows_cuda_tree(tmp_path / "C")
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz")
    ctx = make_ctx(tmp_path, "win-64", root, {"cudnn": archive})
    with pytest.raises(ArtifactError, match=re.escape(
            "not a cuDNN 7 archive for win-64: no cuda/bin/cudnn64_7.dll")):
        CudnnInstallStep(locked(archive)).describe(ctx)


def test_tampered_archive_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    root = linux_cuda_tree(tmp_path / "host")
    before = snapshot(root)
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz")
    lock = locked(archive)
    with open(archive, "ab") as handle:
        handle.write(b"\x00")  # one byte appended after the lock was made
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    step = CudnnInstallStep(lock)

    with pytest.raises(ArtifactError, match=f"tampered.*expected {lock.sha256}, found "):
        step.describe(ctx)
    journal = Journal(ctx.state_dir)
    with pytest.raises(ArtifactError, match="tampered"):
        step.apply(ctx, Transaction(journal, step.name))
    assert snapshot(root) == before
    assert journal.entries() == []


def _symlink_member(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def _file_member(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 1
    return info


@pytest.mark.parametrize("bad", [
    _file_member("cuda/lib64/../../../../evil.so"),
    _file_member("/usr/lib/evil.so"),
    _symlink_member("cuda/lib64/libcudnn_evil.so", "/lib/x86_64-linux-gnu/libc.so.6"),
], ids=["dotdot", "absolute", "symlink-out"])
def test_unsafe_archive_with_the_locked_hash_still_changes_nothing(tmp_path: Path,
                                                                   bad: tarfile.TarInfo) -> None:
    root = linux_cuda_tree(tmp_path / "host")
    before = snapshot(root)
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz", extra=(bad,))
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    step = CudnnInstallStep(locked(archive))  # the hash matches: the lock was made from it
    journal = Journal(ctx.state_dir)

    with pytest.raises(ArtifactError, match=f"refusing to unpack member {bad.name!r}"):
        step.apply(ctx, Transaction(journal, step.name))

    assert snapshot(root) == before
    assert journal.entries() == []
    assert not (tmp_path / "evil.so").exists()


def test_missing_archive_and_missing_toolkit(tmp_path: Path) -> None:
    archive = linux_cudnn_tgz(tmp_path / "cudnn-10.2-linux-x64-v7.6.5.32.tgz")
    step = CudnnInstallStep(locked(archive))
    with pytest.raises(ArtifactError, match=re.escape(
            "download it and pass --artifact cudnn=PATH/cudnn-10.2-linux-x64-v7.6.5.32.tgz")):
        step.describe(make_ctx(tmp_path, "linux-64", tmp_path))
    with pytest.raises(StepError, match="no toolkit was found"):
        step.describe(make_ctx(tmp_path, "linux-64", None, {"cudnn": archive}))


# -- a process killed part way through ---------------------------------------------------

_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from envforge.journal import Journal, Transaction
    from envforge.lockfile import LockedArtifact
    from envforge.steps.cudnn import CudnnInstallStep
    from tests.testing.contexts import make_ctx

    tmp, root, archive, sha, pause_after = sys.argv[1:]
    # Test-only: stop for good right after entry N is durable, before the change it
    # announces, so the parent can SIGKILL the process at that exact point.
    real_append, written = Journal.append, 0
    def append(self, *args, **kwargs):
        global written
        entry = real_append(self, *args, **kwargs)
        written += 1
        if written == int(pause_after):
            print("paused", flush=True)
            time.sleep(600)
        return entry
    Journal.append = append
    ctx = make_ctx(Path(tmp), "linux-64", Path(root), {"cudnn": Path(archive)})
    step = CudnnInstallStep(LockedArtifact(role="cudnn", filename=Path(archive).name,
                                           sha256=sha, source="user download"))
    tx = Transaction(Journal(ctx.state_dir), step.name)
    tx.begin()
    print("applying", flush=True)
    step.apply(ctx, tx)
    tx.done()
    print("done", flush=True)
""")


def _start(tmp: Path, root: Path, archive: Path, pause_after: int) -> subprocess.Popen[str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp), str(root), str(archive),
         hashlib.sha256(archive.read_bytes()).hexdigest(), str(pause_after)],
        stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)


def _wait_for(child: subprocess.Popen[str], word: str) -> None:
    assert child.stdout is not None
    for line in child.stdout:
        if line.strip() == word:
            return
    raise AssertionError(f"child ended before printing {word!r}")


@pytest.mark.posix_only("SIGKILL, and a Linux cuDNN's symlinks")
def test_sigkill_after_any_journal_entry_then_rollback_restores_the_tree(tmp_path: Path) -> None:
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz")
    reference = tmp_path / "reference"
    full = apply(CudnnInstallStep(locked(archive)),
                 make_ctx(reference, "linux-64", linux_cuda_tree(reference / "host"),
                          {"cudnn": archive}))
    total = len(full.entries())
    assert total >= 6  # begin, 5 first touches, done

    for n in range(1, total):
        case = tmp_path / f"kill-after-{n}"
        root = linux_cuda_tree(case / "host")
        before = snapshot(root)
        child = _start(case, root, archive, n)
        try:
            _wait_for(child, "paused")
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
        assert child.returncode == -signal.SIGKILL
        journal = Journal(case / "state")
        assert len(journal.entries()) == n
        rollback(journal)
        assert snapshot(root) == before, f"killed after entry {n}"


def _wait_for_entries(journal: Path, count: int) -> None:
    """Poll until the journal holds ``count`` lines: the step has started changing things."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if journal.is_file() and journal.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.0005)
    raise AssertionError(f"{journal} never reached {count} entries")


@pytest.mark.posix_only("SIGKILL, and a Linux cuDNN's symlinks")
def test_sigkill_at_random_moments_then_rollback_restores_the_tree(tmp_path: Path) -> None:
    # A 48 MB static library makes the copying phase long enough to be hit in mid-write.
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz", static_size=48 << 20)
    rng = random.Random(20191101)
    timing = tmp_path / "timing"
    child = _start(timing, linux_cuda_tree(timing / "host"), archive, 0)
    _wait_for_entries(timing / "state" / "journal.jsonl", 2)
    started = time.monotonic()
    _wait_for(child, "done")
    duration = time.monotonic() - started
    child.wait()

    for attempt in range(6):
        case = tmp_path / f"random-{attempt}"
        root = linux_cuda_tree(case / "host")
        before = snapshot(root)
        child = _start(case, root, archive, 0)
        try:
            _wait_for_entries(case / "state" / "journal.jsonl", 2)
            time.sleep(rng.uniform(0, duration))
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
        rollback(Journal(case / "state"))
        assert snapshot(root) == before, f"attempt {attempt}"


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_a_link_inside_the_archive_that_leads_outside_once_installed_is_refused(
        tmp_path: Path) -> None:
    """Issue 10 #11: ``cuda/lib64/x -> ../../toplevel.so`` stays inside the archive, but
    installed as <cuda>/lib64/x it would point beside the CUDA root."""
    root = linux_cuda_tree(tmp_path / "host")
    before = snapshot(root)
    archive = linux_cudnn_tgz(tmp_path / "cudnn.tgz", extra=(
        _file_member("toplevel.so"),
        _symlink_member("cuda/lib64/libcudnn_evil.so", "../../toplevel.so")))
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    step = CudnnInstallStep(locked(archive))
    journal = Journal(ctx.state_dir)

    with pytest.raises(ArtifactError, match=r"libcudnn_evil\.so -> '\.\./\.\./toplevel\.so' "
                       r"would point outside"):
        step.apply(ctx, Transaction(journal, step.name))
    with pytest.raises(ArtifactError, match="would point outside"):
        step.describe(ctx)

    assert snapshot(root) == before
    assert journal.entries() == []


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_an_apply_hashes_and_unpacks_the_archive_once(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import envforge.host.archives as archives
    import envforge.steps.cudnn as cudnn
    from envforge.executor import execute
    from envforge.plan import make_plan

    root = linux_cuda_tree(tmp_path / "host")
    archive = linux_cudnn_tgz(tmp_path / "cudnn-10.2-linux-x64-v7.6.5.32.tgz")
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    hashed: list[Path] = []
    unpacked: list[Path] = []
    real_hash, real_extract = archives.sha256_file, cudnn.extract_archive

    def counting_hash(path: Path) -> str:
        if Path(path) == archive:
            hashed.append(path)
        return real_hash(path)

    def counting_extract(path: Path, dest: Path) -> None:
        unpacked.append(path)
        real_extract(path, dest)

    for module in ("envforge.host.archives", "envforge.steps.base", "envforge.bundle.sources"):
        monkeypatch.setattr(f"{module}.sha256_file", counting_hash)
    monkeypatch.setattr(cudnn, "extract_archive", counting_extract)
    step = CudnnInstallStep(locked(archive))

    plan = make_plan(ctx, [step], spec="x.toml")
    assert plan.pending and plan.artifacts == {"cudnn": locked(archive).sha256}
    assert execute(ctx, [step], record={"spec": "/x.toml"}, plan=plan) == ["cudnn"]

    assert (len(hashed), len(unpacked)) == (1, 1)
    assert (root / "lib64" / "libcudnn.so.7").readlink() == Path("libcudnn.so.7.6.5")
    assert cudnn_header_version((root / "include" / "cudnn.h").read_text()) == (7, 6, 5)
    assert make_plan(ctx, [step], spec="x.toml").pending is False


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_a_toolkit_file_changed_after_planning_is_refused(tmp_path: Path) -> None:
    from envforge.executor import StalePlanError, execute
    from envforge.plan import make_plan

    root = linux_cuda_tree(tmp_path / "host")
    archive = linux_cudnn_tgz(tmp_path / "cudnn-10.2-linux-x64-v7.6.5.32.tgz")
    ctx = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    step = CudnnInstallStep(locked(archive))
    plan = make_plan(ctx, [step], spec="x.toml")
    (root / "include" / "cudnn.h").write_bytes(cudnn_header(7, 4, 3))
    before = snapshot(root)

    with pytest.raises(StalePlanError, match=f"{root / 'include' / 'cudnn.h'} was sha256:"):
        execute(ctx, [step], record={"spec": "/x.toml"}, plan=plan)
    assert snapshot(root) == before


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_an_archive_preflight_checked_is_not_hashed_again_to_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --bundle or --offline, preflight hashes every file before planning; the step
    trusts its ``checked`` roles, so the archive is read once per apply there too."""
    import envforge.steps.base as base
    from envforge.plan import make_plan

    root = linux_cuda_tree(tmp_path / "host")
    archive = linux_cudnn_tgz(tmp_path / "cudnn-10.2-linux-x64-v7.6.5.32.tgz")
    step = CudnnInstallStep(locked(archive))
    hashed: list[Path] = []
    real_verify = base.verify_artifact

    def counting_verify(path: Path, sha256: str) -> None:
        hashed.append(path)
        real_verify(path, sha256)

    monkeypatch.setattr(base, "verify_artifact", counting_verify)
    checked = replace(make_ctx(tmp_path, "linux-64", root, {"cudnn": archive}),
                      checked=frozenset({"cudnn"}))
    assert make_plan(checked, [step], spec="x.toml").pending
    assert hashed == []

    unchecked = make_ctx(tmp_path, "linux-64", root, {"cudnn": archive})
    make_plan(unchecked, [step], spec="x.toml")
    assert hashed == [archive]

"""The only way a step changes the machine: each change journaled before it is made.

The first touch of a path records its prior state (absent, a file's bytes and mode, a
link's target, a folder); every write records the state it is about to leave (``wrote``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from pathlib import Path

from envforge.errors import StepError
from envforge.host.windows import RegistrySeam, RegistryValue
from envforge.journal.store import Journal, absolute, state_of


class Transaction:
    """The only way a step changes the machine: each change is journaled before it is made."""

    def __init__(self, journal: Journal, step: str) -> None:
        self.journal = journal
        self.step = step

    def begin(self) -> None:
        self.journal.append(self.step, "step-begin")

    def done(self) -> None:
        self.journal.append(self.step, "step-done")

    # -- files -------------------------------------------------------------------------

    def write_bytes(self, path: Path, data: bytes, mode: int | None = None) -> None:
        """Replace or create a file; ``mode`` None keeps the old file's mode (new: 0o644)."""
        path = self._prepare(path)
        self._wrote(path, "sha256:" + hashlib.sha256(data).hexdigest())
        old_mode = _file_mode(path)
        partial = partial_path(path)
        _unlink(partial)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        partial.chmod(mode if mode is not None else old_mode if old_mode is not None else 0o644)
        _replace(partial, path)

    def write_text(self, path: Path, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def copy_file(self, src: Path, dst: Path) -> None:
        """Copy ``src``'s bytes and mode to ``dst``; a link at ``dst`` is replaced, not followed."""
        dst = self._prepare(dst)
        self._wrote(dst, state_of(src))
        partial = partial_path(dst)
        _unlink(partial)
        shutil.copyfile(src, partial)
        shutil.copymode(src, partial)
        _replace(partial, dst)

    def symlink(self, path: Path, target: str) -> None:
        path = self._prepare(path)
        self._wrote(path, f"link:{target}")
        _unlink(path)
        path.symlink_to(target)

    def mkdir(self, path: Path) -> None:
        """Make a folder and any missing parents, recording each one made."""
        path = absolute(path)
        missing: list[Path] = []
        probe = path
        while not os.path.lexists(probe):
            missing.append(probe)
            probe = probe.parent
        if not probe.is_dir():
            raise StepError(f"cannot make folder {path}: {probe} is not a folder")
        for folder in reversed(missing):
            if self.journal.original(folder) is None:
                self.journal.append(self.step, "created", path=folder, kind="dir")
            # another apply may make a shared folder (ENVFORGE_HOME's data/) between the
            # journal's fsync and here: both journals then hold it, and the last rollback's
            # rmdir (an empty folder only) removes it
            folder.mkdir(exist_ok=True)

    def remove(self, path: Path) -> None:
        """Remove a file, link or whole folder; every file in it is backed up first."""
        path = absolute(path)
        if not os.path.lexists(path):
            return
        self._record(path)
        self._wrote(path, "absent")
        if path.is_dir() and not path.is_symlink():
            for root, dirs, files in os.walk(path):
                for name in (*dirs, *files):
                    self._record(Path(root) / name)
            shutil.rmtree(path)
        else:
            path.unlink()

    def adopt_tree(self, path: Path) -> None:
        """Announce that an external tool (venv, rattler, uv) is about to create ``path``.

        Rollback then removes the whole tree. A folder that already exists is refused
        unless this journal created it, so a user's folder is never adopted and deleted.
        """
        path = absolute(path)
        first = self.journal.original(path)
        ours = first is not None and (first.op == "created" or first.kind == "absent")
        if os.path.lexists(path) and not ours:
            raise StepError(f"{path} already exists and envforge did not create it; "
                            "move it away or choose another location")
        self.mkdir(path.parent)
        if first is None or first.op != "backup" or first.kind != "absent":
            self.journal.append(self.step, "backup", path=path, kind="absent")

    # -- registry ----------------------------------------------------------------------

    def set_registry_value(self, registry: RegistrySeam, key: str, name: str,
                           value: RegistryValue, value_type: int) -> None:
        if not self.journal.registry_recorded(key, name):
            current = registry.get(key, name)
            self.journal.append(
                self.step, "registry", key=key, name=name,
                value=None if current is None else current[0],
                value_type=None if current is None else current[1], existed=current is not None)
        registry.set(key, name, value, value_type)

    # -- internals ---------------------------------------------------------------------

    def _prepare(self, path: Path) -> Path:
        """Make the parent, record the original, refuse to put a file where a folder is."""
        path = absolute(path)
        self.mkdir(path.parent)
        self._record(path)
        if path.is_dir() and not path.is_symlink():
            raise StepError(f"{path} is a folder; remove it first")
        return path

    def _wrote(self, path: Path, state: str) -> None:
        self.journal.append(self.step, "wrote", path=path, state=state)

    def _record(self, path: Path) -> None:
        if self.journal.original(path) is not None:
            return
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self.journal.append(self.step, "backup", path=path, kind="absent")
            return
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            self.journal.append(self.step, "backup", path=path, kind="symlink",
                                link_target=str(path.readlink()))
        elif stat.S_ISDIR(st.st_mode):
            self.journal.append(self.step, "backup", path=path, kind="dir", mode=mode)
        elif stat.S_ISREG(st.st_mode):
            self.journal.append(self.step, "backup", path=path, kind="file", mode=mode,
                                backup_of=path)
        else:
            raise StepError(f"{path} is not a file, link or folder; envforge will not change it")


def _file_mode(path: Path) -> int | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def partial_path(path: Path) -> Path:
    """Where a file is written before it is renamed into place: a kill mid-write leaves the
    target as it was (never half-written, which an undo would take for a user's edit) and
    this sibling, which undo removes."""
    return path.with_name(f".{path.name}.envforge-partial")


def _replace(partial: Path, path: Path) -> None:
    """Rename into place; a link at ``path`` is replaced, not followed."""
    if path.is_dir() and not path.is_symlink():
        raise StepError(f"{path} is a folder; remove it first")
    partial.replace(path)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()

"""One error base; every stage raises a subclass, one handler maps them to exit codes."""

from __future__ import annotations

import errno
import os
from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    """Exit codes shared by every command."""

    OK = 0
    FAILED = 1  # a step or a check failed
    BAD_INPUT = 2  # usage, invalid spec or lock, refused artifact
    PENDING = 3  # changes pending (dry run) or stale lock
    INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it


class EnvforgeError(Exception):
    """Base of every error envforge reports to the user as one line."""

    exit_code: ExitCode = ExitCode.FAILED


class InputError(EnvforgeError):
    """Bad input: the user must change a file or an argument."""

    exit_code = ExitCode.BAD_INPUT


class OfflineError(InputError):
    """A needed file is neither in the bundle nor in the cache, and the network is off: the
    user must bring it (a bundle, ``--artifact``, or the network), as preflight says."""


class SpecError(InputError):
    """A spec or lock that cannot be read; names the file, line and key."""

    def __init__(self, path: Path | str, message: str, *, line: int | None = None,
                 key: str | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.key = key
        self.reason = message
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"{key}: {message}" if key else message
        # One line whatever the file holds: a key or value may carry a newline.
        super().__init__(f"{where}: {what}".replace("\r", "\\r").replace("\n", "\\n"))


class CompatibilityError(InputError):
    """The spec pins a combination known not to work; names the rule's source and a fix."""

    def __init__(self, conflict: str, *, source: str, fix: str, path: str | None = None,
                 line: int | None = None, key: str | None = None,
                 repairs: tuple[str, ...] = ()) -> None:
        self.conflict = conflict
        self.source = source
        self.fix = fix
        self.repairs = repairs  # requirements that would each resolve it
        self.path = path
        where = f"{path}:{line}" if path and line is not None else path
        prefix = "".join(f"{part}: " for part in (where, key) if part)
        super().__init__(f"{prefix}{conflict} (source: {source}); fix: {fix}")


class ArtifactError(InputError):
    """An artifact that is missing, tampered with or unsafe to unpack."""


class ResolveError(EnvforgeError):
    """A resolver (uv, rattler, Debian index) could not satisfy the spec."""


class StaleLockError(EnvforgeError):
    """The lock no longer matches its spec."""

    exit_code = ExitCode.PENDING


class ToolError(EnvforgeError):
    """A subprocess failed. The message says what ran, how it ended and its output's tail;
    the fields keep them whole, so callers read ``stderr`` rather than parse the message.
    ``returncode`` is None where the command did not run to an exit (not found, timed out)."""

    def __init__(self, message: str, *, command: tuple[str, ...] = (),
                 returncode: int | None = None, stdout: str = "", stderr: str = "") -> None:
        super().__init__(message)
        self.command = command
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


class StepError(EnvforgeError):
    """An apply step failed; the journal holds what was done so far."""


class BusyError(EnvforgeError):
    """Another envforge process holds the environment's lock."""


# The host refusing a write: one line naming the path and what to do, exit 1 (FAILED).
_HOST_REFUSALS = {
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.ENAMETOOLONG: "the name is too long",
}


def host_refusal(exc: OSError) -> str | None:
    """The one-line message for an OSError the host raised on a write; None for others."""
    if exc.errno not in _HOST_REFUSALS:
        return None
    name = errno.errorcode.get(exc.errno, str(exc.errno))
    where = exc.filename if exc.filename is not None else "a file"
    hint = ("free some space, then run the command again (`envforge apply` resumes, "
            "`envforge rollback` undoes)" if exc.errno in (errno.ENOSPC, errno.EDQUOT)
            else "envforge must write there: make it writable, or set ENVFORGE_HOME to a "
            "folder you can write (HOME for a framework's config file there)")
    return f"{os.fsdecode(where)}: {_HOST_REFUSALS[exc.errno]} ({name}); {hint}"

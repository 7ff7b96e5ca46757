"""A git dependency as a file: the source archive of one commit, made by ``git archive``.

``git archive`` of a commit is byte-for-byte repeatable (the commit's time stamps every
entry), so the lock can carry the archive's sha256 and any host that can reach the
repository (or a bundle or cache that holds the archive) gets the very same file; a git whose
archive differs is refused by that hash, never trusted.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from envforge.errors import ResolveError, ToolError
from envforge.host import proc


def git_url(repo: str, commit: str) -> str:
    """The URL a lock records: ``git+<repository>@<commit>``."""
    return f"git+{repo}@{commit}"


def parse_git_url(url: str) -> tuple[str, str]:
    """``git+<repository>@<commit>`` -> (repository, commit)."""
    repo, sep, commit = url.removeprefix("git+").rpartition("@")
    if not url.startswith("git+") or not sep or not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise ResolveError(f"{url}: not git+<repository>@<40-hex commit>")
    return repo, commit


def archive_commit(repo: str, commit: str, prefix: str, target: Path) -> None:
    """Write ``target`` (.tar.gz): the tree of ``commit`` under ``prefix/``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="envforge-git-") as tmp:
        bare = Path(tmp) / "repo.git"
        try:
            proc.run(["git", "clone", "--bare", "--quiet", repo, str(bare)], timeout=600)
            proc.run(["git", "-C", str(bare), "archive", "--format=tar.gz",
                      f"--prefix={prefix}/", "-o", str(target), commit], timeout=600)
        except ToolError as exc:
            raise ResolveError(f"git dependency {repo}@{commit[:12]}: {exc}") from None

"""Hashes, and the one member scan every extractor runs before it writes a byte.

tar and zip (host/unarchive.py), a .deb's data.tar (host/debunpack.py), MinGW's .7z
(host/sevenzip.py) and wheels (host/unpacked.py, host/wheelinstall.py) list their members
as ``Member`` values and hand them to ``scan_members``, so one rule decides for all: an
archive is scanned whole and one bad member refuses the lot, naming the archive and the
member. Refused: absolute names, ``..`` escapes, names Windows cannot hold (where asked),
links (symbolic or hard) that lead outside, members written through a link (where asked),
device files and FIFOs, set-uid/set-gid bits unless allowed, and archives that would
unpack to more than their budget (``check_unpacked_size``). Link targets are resolved the
way the kernel would, following the archive's own links, so ``a -> .`` then
``b -> a/../x`` is caught even though ``a/../x`` looks harmless as text.
"""

from __future__ import annotations

import hashlib
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from envforge.confine import EscapeError, relative_parts
from envforge.errors import ArtifactError

_CHUNK = 1 << 20
# Decompression bombs: an archive may unpack to at most RATIO times its own size (real
# archives here stay under 10:1; deflate's ceiling is about 1000:1), with a floor for tiny
# archives and a ceiling for all. Checked on declared sizes before anything is written.
MAX_RATIO = 100
MIN_BUDGET = 64 << 20
MAX_UNPACKED = 32 << 30
_MAX_HOPS = 40  # links followed while resolving one path, as the kernel's limit
_DRIVE = re.compile(r"^[A-Za-z]:")
_DEVICE_NAMES = {"con", "prn", "aux", "nul", *(f"{p}{n}" for p in ("com", "lpt")
                                             for n in range(1, 10))}


def unpack_budget(packed: int) -> int:
    """The most bytes an archive of ``packed`` bytes may unpack to."""
    return min(MAX_UNPACKED, max(MIN_BUDGET, packed * MAX_RATIO))


def check_unpacked_size(archive: Path | str, packed: int, unpacked: int) -> None:
    """Refuse an archive whose contents would exceed its budget (a decompression bomb)."""
    if unpacked < 0:
        raise ArtifactError(f"{archive}: a member declares a negative size; refused")
    if unpacked > unpack_budget(packed):
        raise ArtifactError(
            f"{archive}: would unpack to {unpacked >> 20} MiB from {packed >> 20} MiB, over "
            f"the limit of {unpack_budget(packed) >> 20} MiB ({MAX_RATIO}:1, at most "
            f"{MAX_UNPACKED >> 30} GiB): refusing a likely decompression bomb")


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in chunks (cuDNN archives run to gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_artifact(path: Path, sha256: str) -> None:
    """Refuse a missing file or one whose hash differs from the lock's."""
    if not Path(path).is_file():
        raise ArtifactError(f"{path}: no such file")
    found = sha256_file(path)
    if found != sha256.lower():
        raise ArtifactError(f"{path}: sha256 mismatch, the file was tampered with or is not the "
                            f"one locked: expected {sha256.lower()}, found {found}")


def safe_member_name(archive: Path | str, raw: str) -> str:
    """A member's name made relative, or ArtifactError: absolute, escaping, too long."""
    try:
        return "/".join(relative_parts(raw))
    except EscapeError as exc:
        raise refuse_member(archive, raw, str(exc)) from None


def refuse_member(archive: Path | str, member: str, why: str) -> ArtifactError:
    return ArtifactError(f"{archive}: refusing to unpack member {member!r}: {why}")


MemberKind = Literal["file", "dir", "symlink", "hardlink", "special"]


@dataclass(frozen=True)
class Member:
    """One member as its archive lists it; ``handle`` is the format's own record, for the
    extractor that writes it."""

    raw: str  # the name as written in the archive
    kind: MemberKind
    mode: int = 0
    size: int = 0
    link: str | None = None  # a symlink's target as written; a hard link's member name
    handle: object = None


@dataclass(frozen=True)
class Rules:
    """What a format's extractor allows beyond the common rule."""

    links: bool = True  # False: any link is refused (7z: reading its target means unpacking)
    through_links: bool = False  # members below one of the archive's symlinks (a .deb's)
    rooted: bool = False  # an absolute link target is read from the destination (a .deb's /)
    setuid: bool = False  # set-uid/set-gid bits kept (or dropped by the extractor)
    windows_names: bool = False  # no ``:`` streams, no device names (con, nul, com1, …)


@dataclass(frozen=True)
class Scanned:
    """A member that passed: its name made relative, and its link as it is to be written
    (a symlink's text, made relative when rooted; a hard link's member name)."""

    name: str
    member: Member
    link: str | None = None


def scan_members(archive: Path | str, members: Iterable[Member], *, packed: int,
                 rules: Rules = Rules()) -> list[Scanned]:
    """Every member checked, in the archive's order (the root folder itself left out), or
    ArtifactError naming the first bad one; nothing has been written yet."""
    scanned: list[Scanned] = []
    kinds: dict[str, MemberKind] = {}
    total = 0
    for member in members:
        total += member.size
        name = _name(archive, member, rules)
        if name is None:
            continue
        _check_kind(archive, member, rules)
        previous = kinds.get(name)
        if previous is not None and previous != member.kind:
            raise refuse_member(archive, member.raw,
                                f"appears both as {previous} and {member.kind}")
        if previous is not None and member.kind != "dir":
            raise refuse_member(archive, member.raw, "appears twice")
        kinds[name] = member.kind
        scanned.append(Scanned(name, member, _link_text(archive, member, name, rules)))
    check_unpacked_size(archive, packed, total)
    _check_links(archive, scanned, kinds, rules)
    return scanned


def _name(archive: Path | str, member: Member, rules: Rules) -> str | None:
    if member.kind == "dir" and not [p for p in member.raw.replace("\\", "/").split("/")
                                     if p not in ("", ".")]:
        return None  # the destination itself
    name = safe_member_name(archive, member.raw)
    if rules.windows_names:
        for part in name.split("/"):
            if ":" in part or part.split(".")[0].rstrip(" ").casefold() in _DEVICE_NAMES:
                raise refuse_member(archive, member.raw, "not a plain Windows file name")
    return name


def _check_kind(archive: Path | str, member: Member, rules: Rules) -> None:
    if member.kind == "special":
        raise refuse_member(archive, member.raw, "device file, FIFO or other special file")
    if not rules.links and member.kind in ("symlink", "hardlink"):
        raise refuse_member(archive, member.raw, "a link (symbolic link, hard link or junction)")
    if member.mode & (stat.S_ISUID | stat.S_ISGID) and not rules.setuid:
        raise refuse_member(archive, member.raw, "set-uid or set-gid bit")


def _link_text(archive: Path | str, member: Member, name: str, rules: Rules) -> str | None:
    if member.kind == "hardlink":
        assert member.link is not None
        try:
            return "/".join(relative_parts(member.link))
        except EscapeError:
            raise refuse_member(archive, member.raw,
                                f"hard link to {member.link!r} leads outside") from None
    if member.kind != "symlink":
        return None
    assert member.link is not None
    if rules.rooted and member.link.startswith("/"):  # as inside a chroot: from the root
        text = "/".join([".."] * name.count("/") + [member.link.lstrip("/")])
        return text.rstrip("/") or "."
    return member.link


def _check_links(archive: Path | str, scanned: list[Scanned], kinds: dict[str, MemberKind],
                 rules: Rules) -> None:
    """On the whole archive: a later link can change where an earlier one leads."""
    links = {s.name: s.link for s in scanned if s.member.kind == "symlink" and s.link}
    files: set[str] = set()
    for entry in scanned:
        parts = entry.name.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if kinds.get(parent) in ("file", "hardlink"):
                raise refuse_member(archive, entry.member.raw, f"{parent} is a file")
            if parent in links and not rules.through_links:
                raise refuse_member(archive, entry.member.raw,
                                    "it would be written through a link")
        where = resolve_link(links, [], "/".join(parts[:-1]))
        if where is None:
            raise refuse_member(archive, entry.member.raw, "it would be written outside")
        if entry.member.kind == "symlink":
            assert entry.link is not None
            if resolve_link(links, where, entry.link) is None:
                raise refuse_member(archive, entry.member.raw,
                                    f"link to {entry.member.link!r} leads outside")
        elif entry.member.kind == "hardlink":
            if entry.link not in files:
                raise refuse_member(archive, entry.member.raw, f"hard link to "
                                    f"{entry.member.link!r}, which is not a file before it")
        elif entry.member.kind == "file":
            files.add(entry.name)


def resolve_link(links: dict[str, str], start: list[str], target: str,
                 hops: int = 0) -> list[str] | None:
    """Where ``target``, read from folder ``start``, leads among ``links`` (path -> text);
    None: outside, or more than the kernel's 40 hops."""
    text = target.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text) or hops > _MAX_HOPS:
        return None
    current = list(start)
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not current:
                return None
            current.pop()
            continue
        current.append(part)
        joined = "/".join(current)
        if joined in links:
            resolved = resolve_link(links, current[:-1], links[joined], hops + 1)
            if resolved is None:
                return None
            current = resolved
    return current

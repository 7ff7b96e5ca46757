"""What installing a cache entry's wheel takes that is the same for every target, worked out
once when the entry is made (``host/unpacked.py``) and kept in its manifest.

installer's ``install()`` reads WHEEL and entry_points.txt and, per install, sorts every
member's RECORD row and writes it through ``csv``; for ml75 that was ~12,500 rows an apply.
A member's row depends only on its path, hash and size, so the rows are sorted and written
here, once, with installer's own ``RecordEntry.to_row`` and ``csv`` dialect: an install
joins them, filling in the rows that depend on the target (``.data`` members outside the
root scheme carry a path relative to it; ``.data/scripts`` have their shebang rewritten)
and inserting the ones it writes itself (entry-point scripts, INSTALLER, RECORD) where
installer's stable sort by path puts them.
"""

from __future__ import annotations

import configparser
import csv
import io
import os
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from installer.records import Hash, RecordEntry
from installer.utils import SCHEME_NAMES, Scheme, parse_entrypoints, parse_metadata_file
from installer.utils import parse_wheel_filename as installer_wheel_name

from envforge.errors import ArtifactError
from envforge.platforms import Os, host_platform

ScriptSection = Literal["console", "gui"]  # installer's, named only when type-checking
_SECTIONS: dict[str, ScriptSection] = {"console": "console", "gui": "gui"}


@dataclass(frozen=True)
class DataMember:
    """A ``{name}-{version}.data/{scheme}/{inside}`` member and its RECORD row's place."""

    index: int  # in the entry's files (the archive's order)
    scheme: Scheme
    inside: str
    row: int  # its place in ``WheelPlan.rows``, left empty there


@dataclass(frozen=True)
class WheelPlan:
    """An entry's install, less what depends on the target."""

    dist_info: str
    root: Scheme  # where members outside ``.data`` go
    scripts: tuple[tuple[str, str, str, ScriptSection], ...]  # entry points' name, module, attr
    pycache: tuple[str, ...]  # members installer skips with a warning
    data: tuple[DataMember, ...]
    unlinked: frozenset[int]  # members not linked into the root scheme: RECORD, these two
    keys: tuple[str, ...]  # each member row's path within its scheme, sorted
    rows: tuple[str, ...]  # each member row as RECORD spells it ("" for a ``.data`` one)

    @property
    def record_path(self) -> str:
        return f"{self.dist_info}/RECORD"

    def to_json(self) -> dict[str, Any]:
        return {"dist_info": self.dist_info, "root": self.root,
                "scripts": [list(s) for s in self.scripts], "pycache": list(self.pycache),
                "data": [[d.index, d.scheme, d.inside, d.row] for d in self.data],
                "unlinked": sorted(self.unlinked), "keys": list(self.keys),
                "rows": list(self.rows)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], files: int) -> WheelPlan:
        """The manifest's plan; ValueError or TypeError where it cannot be an entry's of
        ``files`` members (the entry is then made again)."""
        keys, rows = tuple(raw["keys"]), tuple(raw["rows"])
        data = tuple(DataMember(int(i), Scheme(s), str(p), int(r)) for i, s, p, r in raw["data"]
                     if s in SCHEME_NAMES)
        unlinked = frozenset(int(i) for i in raw["unlinked"])
        if raw["root"] not in ("purelib", "platlib") or len(keys) != len(rows) \
                or len(data) != len(raw["data"]) \
                or not all(0 <= d.index < files and 0 <= d.row < len(rows) for d in data) \
                or not all(0 <= i < files for i in unlinked):
            raise ValueError("a wheel plan that does not fit its entry")
        if not all(isinstance(k, str) for k in keys) or not all(isinstance(r, str) for r in rows):
            raise TypeError("a wheel plan's rows are not text")
        scripts = tuple((str(n), str(m), str(a), _SECTIONS[s]) for n, m, a, s in raw["scripts"])
        return cls(str(raw["dist_info"]), Scheme(raw["root"]), scripts,
                   tuple(str(p) for p in raw["pycache"]), data, unlinked, keys, rows)

    def record(self, schemes: Mapping[str, str], scripts: Sequence[RecordEntry],
               data: Sequence[RecordEntry], installer: RecordEntry) -> bytes:
        """RECORD's bytes as installer's ``finalize_installation`` writes them: ``scripts``
        are the entry points' rows (in ``self.scripts``' order), ``data`` the ``.data``
        members' (in ``self.data``'s), ``installer`` INSTALLER's; ``schemes`` the target's
        folders."""
        line = _Lines()
        rows = list(self.rows)
        for member, entry in zip(self.data, data, strict=True):
            rows[member.row] = line(entry, _prefix(schemes, self.root, member.scheme))
        # Installer's stable sort: its scripts come before members of the same path, its
        # INSTALLER and RECORD after.
        scripts_prefix = _prefix(schemes, self.root, Scheme("scripts"))
        extra = [(e.path, 0, i, bisect_left(self.keys, e.path), line(e, scripts_prefix))
                 for i, e in enumerate(scripts)]
        extra += [(e.path, 1 + i, 0, bisect_right(self.keys, e.path), line(e, None))
                  for i, e in enumerate((installer, RecordEntry(self.record_path, None, None)))]
        parts, done = [], 0
        for _, _, _, at, text in sorted(extra):
            parts += rows[done:at]
            parts.append(text)
            done = at
        parts += rows[done:]
        return "".join(parts).encode("utf-8")


def plan_wheel(wheel: str, members: Sequence[tuple[str, str, int]],
               read: Callable[[str], str]) -> WheelPlan:
    """The plan for the wheel named ``wheel`` whose members (in the archive's order) are
    ``(path, sha256 as RECORD spells it, size)``; ``read(path)`` gives a member's text."""
    tops = {path.partition("/")[0] for path, _, _ in members}
    dist_infos = sorted(t for t in tops if t.endswith(".dist-info"))
    if len(dist_infos) != 1:
        raise ArtifactError(f"{wheel}: not one .dist-info folder ({dist_infos})")
    dist_info = dist_infos[0]
    paths = {path for path, _, _ in members}
    if f"{dist_info}/WHEEL" not in paths:
        raise ArtifactError(f"{wheel}: no WHEEL file in {dist_info}")
    try:
        wheel_meta = parse_metadata_file(read(f"{dist_info}/WHEEL"))
        entry_points = f"{dist_info}/entry_points.txt"
        scripts = tuple(parse_entrypoints(read(entry_points))) if entry_points in paths else ()
    except (UnicodeDecodeError, ValueError, configparser.Error) as exc:
        raise ArtifactError(f"{wheel}: unreadable {dist_info} ({exc})") from None
    if not (wheel_meta["Wheel-Version"] or "").startswith("1."):
        raise ArtifactError(f"{wheel}: Wheel-Version {wheel_meta['Wheel-Version']}, only "
                            "1.x is supported")
    root = Scheme("purelib" if wheel_meta["Root-Is-Purelib"] == "true" else "platlib")
    parsed = installer_wheel_name(wheel)
    data_dir = f"{parsed.distribution}-{parsed.version}.data/"
    record_path = f"{dist_info}/RECORD"
    pycache, unlinked = [], set()
    line = _Lines()
    rows: list[tuple[str, int, str | None, str, str]] = []  # key, index, scheme, inside, line
    for index, (path, sha256, size) in enumerate(members):
        if path == record_path or "__pycache__" in path.split("/")[:-1]:
            if path != record_path:
                pycache.append(path)
            unlinked.add(index)
            continue
        if not path.startswith(data_dir):
            rows.append((path, index, None, path,
                         line(RecordEntry(path, Hash("sha256", sha256), size), None)))
            continue
        name, _, inside = path[len(data_dir):].partition("/")
        if name not in SCHEME_NAMES or not inside:
            raise ArtifactError(f"{wheel}: {path} is not in a valid .data subfolder")
        unlinked.add(index)
        rows.append((inside, index, name, inside, ""))
    rows.sort(key=lambda row: (row[0], row[1]))  # installer's: by path, then archive order
    data = tuple(sorted((DataMember(index, Scheme(scheme), inside, at)
                         for at, (_, index, scheme, inside, _) in enumerate(rows)
                         if scheme is not None), key=lambda d: d.index))
    return WheelPlan(dist_info, root, tuple((n, m, a, s) for n, m, a, s in scripts),
                     tuple(pycache), data, frozenset(unlinked),
                     tuple(row[0] for row in rows), tuple(row[4] for row in rows))


def _prefix(schemes: Mapping[str, str], root: Scheme, scheme: Scheme) -> str | None:
    """installer's ``prefix_for_scheme``: how RECORD names a file outside the root scheme."""
    if scheme == root:
        return None
    host = host_platform().os
    match host:
        case Os.WINDOWS:
            return os.path.abspath(schemes[scheme]) + "/"  # noqa: PTH100 (installer's own)
        case Os.LINUX:
            return os.path.relpath(schemes[scheme], start=schemes[root]) + "/"
        case _:
            assert_never(host)


class _Lines:
    """RECORD rows one at a time, as installer's ``construct_record_file`` writes them."""

    def __init__(self) -> None:
        self._out = io.StringIO(newline="")
        self._writer = csv.writer(self._out, delimiter=",", quotechar='"', lineterminator="\n")

    def __call__(self, entry: RecordEntry, prefix: str | None) -> str:
        self._out.seek(0)
        self._out.truncate()
        self._writer.writerow(entry.to_row(prefix))
        return self._out.getvalue()

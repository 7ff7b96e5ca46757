"""Is a wheel built from a locked sdist fit to install? The checks that survive a compiler.

The sdist's sha256 (in the lock) is the anchor, as pip's ``--require-hashes`` treats it; the
wheel built from it cannot be compared with it byte for byte (a C extension is compiled,
and compiled builds are not reproducible), so it is held to what a build must keep: its
``METADATA`` names the sdist's distribution and version (``PKG-INFO``, and the lock's entry),
every member lands inside the install scheme, and its tags fit the target's Python and
platform. Its own sha256 comes from where it was kept: the host's build cache or the
bundle's manifest.
"""

from __future__ import annotations

import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    canonicalize_version,
    parse_wheel_filename,
)

from envforge.errors import ArtifactError
from envforge.host.archives import safe_member_name
from envforge.host.wheelinstall import check_fits
from envforge.lockfile import LockedPypiFile
from envforge.platforms import PLATFORMS
from envforge.spec import Platform

# A wheel's ``NAME.data/`` folders (the wheel spec, "The .data directory"): nothing else.
SCHEMES = frozenset({"purelib", "platlib", "scripts", "data", "headers"})


# The checks this process passed, with the stat of the wheel and sdist then: apply checks
# a built wheel at preflight and again at its install step.
_PASSED: dict[tuple[str, ...], tuple[tuple[int, ...], ...]] = {}


def check_built_wheel(wheel: Path, sdist: LockedPypiFile, archive: Path | None, *,
                      target_python: str, platform: Platform) -> None:
    """Refuse (ArtifactError, naming the wheel) a wheel that is not a build of ``sdist`` for
    the target: another name or version than the sdist's, a member outside the install
    scheme, or tags the target's Python or platform cannot use. ``archive`` is the verified
    sdist when at hand: the ``PKG-INFO`` it carries must agree too (a git dependency's archive
    is the commit's tree, with none: the lock's entry names what its wheel must be). Asked
    again in this process with both files as they were (same stat), it is not redone."""
    key = (str(wheel), sdist.model_dump_json(), str(archive), target_python, platform)
    seen = _stats(wheel, archive)  # before the check: a write during it is seen next time
    if seen is not None and _PASSED.get(key) == seen:
        return
    _check_built_wheel(wheel, sdist, archive, target_python=target_python, platform=platform)
    if seen is not None:
        _PASSED[key] = seen


def _stats(*paths: Path | None) -> tuple[tuple[int, ...], ...] | None:
    """Each file's (size, mtime, ctime, inode, device); None when one cannot be read (the
    check then says why)."""
    try:
        stats = [path.stat() for path in paths if path is not None]
    except OSError:
        return None
    return tuple((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
                 for st in stats)


def _check_built_wheel(wheel: Path, sdist: LockedPypiFile, archive: Path | None, *,
                       target_python: str, platform: Platform) -> None:
    expected: set[tuple[str, str]] = {(canonicalize_name(sdist.name),
                                       canonicalize_version(sdist.version))}
    if archive is not None and sdist.origin != "git":  # a commit's `git archive` has none
        carried = _pkg_info(archive)
        if carried is not None:
            expected.add(_identity(carried, archive))
    if len(expected) != 1:
        raise ArtifactError(f"{archive}: its PKG-INFO does not name {sdist.name} "
                            f"{sdist.version}, as the lock does: refusing it")
    metadata = _scan(wheel)
    found = _identity(metadata, wheel)
    if found not in expected:
        raise ArtifactError(f"{wheel}: its METADATA names {metadata['Name']} "
                            f"{metadata['Version']}, not "
                            f"{sdist.name} {sdist.version} of {sdist.filename}: not built from "
                            "it, refusing it")
    major, _, rest = target_python.partition(".")
    check_fits(wheel, (int(major), int(rest.split(".")[0])))
    wanted = {"any", *PLATFORMS[platform].wheel_tags}
    try:
        tags = parse_wheel_filename(wheel.name)[3]
    except InvalidWheelFilename as exc:  # pragma: no cover - check_fits refused it first
        raise ArtifactError(f"{wheel}: not a wheel file name ({exc})") from None
    if not any(t.platform in wanted for t in tags):
        shown = ".".join(sorted({t.platform for t in tags}))
        raise ArtifactError(f"{wheel.name} is built for {shown}, not {platform}: refusing it")


def _identity(headers: dict[str, str], where: Path) -> tuple[str, str]:
    name, version = headers.get("Name"), headers.get("Version")
    if not name or not version:
        raise ArtifactError(f"{where}: its metadata names no Name and Version: refusing it")
    return canonicalize_name(name), canonicalize_version(version)


def _headers(text: bytes) -> dict[str, str]:
    message = HeaderParser().parsestr(text.decode("utf-8", "replace"))
    return {key: str(message[key]) for key in ("Name", "Version") if message[key] is not None}


def _pkg_info(archive: Path) -> dict[str, str] | None:
    """The metadata an sdist carries: its top-level ``NAME-VERSION/PKG-INFO`` (a tarball, or a
    zip as setuptools made them before PEP 625: networkx 2.2 has no other), else the one
    ``NAME-VERSION/*.egg-info/PKG-INFO`` (dill 0.2.9's sdist, made by hand, has no other);
    None where it carries neither (before the sdist format's PKG-INFO rule, PEP 643, nothing
    required one: the lock's entry, anchored by the sdist's sha256, names the wheel then)."""
    egg_info: bytes | None = None
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for name in zf.namelist():
                    parts = name.strip("/").split("/")
                    if name.endswith("/"):
                        continue
                    if len(parts) == 2 and parts[1] == "PKG-INFO":
                        return _headers(zf.read(name))
                    if egg_info is None and _egg_info_member(parts):
                        egg_info = zf.read(name)
        else:
            with tarfile.open(archive, "r:*") as tar:
                for member in tar:  # stops at it: not the whole tarball (0.25 s for Theano's)
                    parts = member.name.strip("/").split("/")
                    if not member.isfile():
                        continue
                    if len(parts) == 2 and parts[1] == "PKG-INFO":
                        handle = tar.extractfile(member)
                        return _headers(handle.read()) if handle is not None else None
                    if egg_info is None and _egg_info_member(parts):
                        handle = tar.extractfile(member)
                        egg_info = handle.read() if handle is not None else None
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ArtifactError(f"{archive}: cannot read the sdist ({exc})") from None
    return _headers(egg_info) if egg_info is not None else None


def _egg_info_member(parts: list[str]) -> bool:
    return len(parts) == 3 and parts[1].endswith(".egg-info") and parts[2] == "PKG-INFO"


def _scan(wheel: Path) -> dict[str, str]:
    """The wheel's METADATA headers, once every member is known to land inside the scheme."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = [safe_member_name(wheel, n) for n in zf.namelist() if not n.endswith("/")]
            infos = sorted({n.split("/", 1)[0] for n in names if ".dist-info/" in n})
            if len(infos) != 1 or f"{infos[0]}/METADATA" not in names:
                raise ArtifactError(f"{wheel}: not one .dist-info with a METADATA "
                                    f"({', '.join(infos) or 'none'}): refusing it")
            for name in names:
                top, _, rest = name.partition("/")
                if top.endswith(".data") and rest.split("/", 1)[0] not in SCHEMES:
                    raise ArtifactError(f"{wheel}: {name} is outside the install scheme "
                                        f"({', '.join(sorted(SCHEMES))}): refusing it")
            return _headers(zf.read(f"{infos[0]}/METADATA"))
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactError(f"{wheel}: not a readable wheel ({exc})") from None

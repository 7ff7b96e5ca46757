"""A lock in other tools' formats: conda-lock v1, PEP 751 pylock, pip requirements, @EXPLICIT.

Pure functions from a Lockfile to text; which file a user writes them to is the CLI's business.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import tomli_w

from envforge import __version__
from envforge.errors import InputError
from envforge.lockfile import Lockfile
from envforge.platforms import PLATFORMS
from envforge.spec import Platform

ExportFormat = Literal["conda-lock", "pylock", "requirements", "explicit"]
FORMATS: tuple[ExportFormat, ...] = ("conda-lock", "pylock", "requirements", "explicit")


def export_lock(lock: Lockfile, fmt: ExportFormat, platform: Platform | None = None) -> str:
    """Render the lock; formats made for one platform need it named when the lock has several."""
    if fmt == "conda-lock":
        return conda_lock_yaml(lock, [platform] if platform else list(lock.platforms))
    chosen = _one_platform(lock, platform)
    if fmt == "pylock":
        return pylock_toml(lock, chosen)
    if fmt == "requirements":
        return requirements_txt(lock, chosen)
    return explicit_txt(lock, chosen)


def _one_platform(lock: Lockfile, platform: Platform | None) -> Platform:
    if platform is not None:
        if platform not in lock.platforms:
            raise InputError(f"the lock has no platform {platform} "
                             f"(it has {', '.join(lock.platforms)})")
        return platform
    if len(lock.platforms) == 1:
        return next(iter(lock.platforms))
    raise InputError(f"this format is per platform: add --platform "
                     f"({' or '.join(lock.platforms)})")


def requirements_txt(lock: Lockfile, platform: Platform) -> str:
    """pip's hash-checking mode: every file pinned by its sha256."""
    lines = [f"# {lock.meta.spec_name} for {platform}, exported by envforge {__version__}",
             f"--index-url {lock.meta.pypi_index or 'https://pypi.org/simple'}"]
    for file in lock.platforms[platform].pypi:
        if file.origin == "git":
            raise InputError(f"{file.name} is a git dependency: pip cannot hash-check a git "
                             "source; export --format pylock instead")
        what = f"{file.name}=={file.version}" if file.origin is None \
            else f"{file.name} @ {file.url}"
        lines.append(f"{what} \\\n    --hash=sha256:{file.sha256}")
    return "\n".join(lines) + "\n"


def explicit_txt(lock: Lockfile, platform: Platform) -> str:
    """conda's ``@EXPLICIT`` list: URLs with their md5, installable with no solve."""
    plock = lock.platforms[platform]
    if not plock.conda:
        raise InputError(f"the lock has no conda packages for {platform}")
    lines = [f"# {lock.meta.spec_name}, exported by envforge {__version__}",
             f"# platform: {platform}", "@EXPLICIT"]
    lines += [f"{pkg.url}#{pkg.md5}" for pkg in plock.conda]
    return "\n".join(lines) + "\n"


def pylock_toml(lock: Lockfile, platform: Platform) -> str:
    """PEP 751 ``pylock.toml`` for one platform, with each package's one file."""
    plock = lock.platforms[platform]
    marker = f'sys_platform == "{PLATFORMS[platform].sys_platform}"'
    packages: list[dict[str, Any]] = []
    for file in plock.pypi:
        entry: dict[str, Any] = {"name": file.name, "version": file.version}
        if file.origin is None:
            entry["index"] = lock.meta.pypi_index or "https://pypi.org/simple"
        artifact: dict[str, Any] = {"name": file.filename, "url": file.url,
                                    "hashes": {"sha256": file.sha256}}
        if file.size is not None:
            artifact["size"] = file.size
        if file.origin == "git":  # PEP 751 names the commit; the archive's hash is envforge's
            repo = file.url.removeprefix("git+").rsplit("@", 1)[0]
            entry["vcs"] = {"type": "git", "url": repo, "commit-id": file.commit}
        elif file.origin == "path":
            entry["archive"] = {k: v for k, v in artifact.items() if k != "name"}
        elif file.kind == "wheel":
            entry["wheels"] = [artifact]
        else:
            entry["sdist"] = artifact
        packages.append(entry)
    document = {
        "lock-version": "1.0",
        "environments": [marker],
        "requires-python": f"=={_minor(plock.python)}.*",
        "created-by": "envforge",
        "packages": packages,
    }
    return tomli_w.dumps(document)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def conda_lock_yaml(lock: Lockfile, platforms: Sequence[Platform]) -> str:
    """conda-lock's unified lock format, version 1 (what conda-lock and micromamba read).

    Scalars are written as JSON strings, which YAML reads as double-quoted scalars.
    """
    for platform in platforms:
        if platform not in lock.platforms:
            raise InputError(f"the lock has no platform {platform}")
    q = json.dumps
    out = ["version: 1", "metadata:", "  content_hash:"]
    out += [f"    {p}: {q(lock.meta.spec_hash)}" for p in platforms]
    out.append("  channels:")
    channels = lock.meta.conda_channels or ()
    out += [f"  - url: {q(c)}\n    used_env_vars: []" for c in channels]
    if not channels:
        out[-1] = "  channels: []"
    out.append("  platforms:")
    out += [f"  - {q(p)}" for p in platforms]
    out += ["  sources:", f"  - {q(lock.meta.spec)}", "package:"]
    count = 0
    for platform in platforms:
        plock = lock.platforms[platform]
        for pkg in plock.conda:
            out += _yaml_package(pkg.name, pkg.version, "conda", platform,
                                 _conda_depends(pkg.depends), pkg.url,
                                 {"md5": pkg.md5, "sha256": pkg.sha256})
            count += 1
        for file in plock.pypi:
            out += _yaml_package(file.name, file.version, "pip", platform, {}, file.url,
                                 {"sha256": file.sha256})
            count += 1
    if count == 0:
        out[-1] = "package: []"
    return "\n".join(out) + "\n"


def _yaml_package(name: str, version: str, manager: str, platform: str,
                  depends: dict[str, str], url: str, hashes: dict[str, str]) -> list[str]:
    q = json.dumps
    lines = [f"- name: {q(name)}", f"  version: {q(version)}", f"  manager: {q(manager)}",
             f"  platform: {q(platform)}"]
    if depends:
        lines.append("  dependencies:")
        lines += [f"    {q(k)}: {q(v)}" for k, v in depends.items()]
    else:
        lines.append("  dependencies: {}")
    lines += [f"  url: {q(url)}", "  hash:"]
    lines += [f"    {k}: {q(v)}" for k, v in hashes.items()]
    lines += ['  category: "main"', "  optional: false"]
    return lines


def _conda_depends(depends: Sequence[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for dep in depends:
        name, _, constraint = dep.partition(" ")
        result[name] = constraint.strip() or "*"
    return result


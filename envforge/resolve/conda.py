"""Conda solving with rattler for a target platform, which need not be this host's.

The target is data: its subdir plus the virtual packages it is assumed to provide
(``knowledge/virtual_packages.toml``), never what this machine detects. Each solved
record becomes a ``LockedCondaPackage``; one without a sha256 is refused, because
apply checks every archive against it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import rattler
from rattler.exceptions import (
    FetchRepoDataError,
    GatewayError,
    InvalidChannelError,
    InvalidMatchSpecError,
    InvalidPackageNameError,
    InvalidVersionError,
    SolverError,
)

from envforge.errors import ResolveError
from envforge.lockfile import LockedCondaPackage
from envforge.paths import envforge_dirs
from envforge.spec import Platform

DEFAULT_CHANNELS = ("conda-forge",)


@dataclass(frozen=True)
class VirtualPackage:
    """What the target provides outside conda (OS, glibc, CUDA driver), for the solver."""

    name: str
    version: str
    build: str = "0"

    def __str__(self) -> str:
        return f"{self.name}={self.version}" + (f"={self.build}" if self.build != "0" else "")


def default_virtual_packages(platform: Platform, *,
                             cuda: str | None = None) -> tuple[VirtualPackage, ...]:
    """The target's virtual packages; ``__cuda`` only when the spec pins a CUDA version."""
    text = resources.files("envforge.knowledge").joinpath("virtual_packages.toml").read_text(
        encoding="utf-8")
    packages = []
    for name, value in tomllib.loads(text)[platform].items():
        if name == "source":
            continue
        version, _, build = str(value).partition(" ")
        packages.append(VirtualPackage(name, version, build or "0"))
    if cuda is not None:
        packages.append(VirtualPackage("__cuda", cuda))
    return tuple(packages)


def channel_url(channel: str) -> str:
    """A channel's canonical URL: names go under conda.anaconda.org, local paths become file://."""
    try:
        return str(rattler.Channel(channel).base_url).rstrip("/")
    except InvalidChannelError as exc:
        raise ResolveError(f"invalid conda channel {channel!r}: {_one_line(str(exc))}") from None


def python_spec(python: str) -> str:
    """``3.7`` -> ``python 3.7.*``; ``3.7.16`` -> ``python ==3.7.16``."""
    return f"python {python}.*" if python.count(".") == 1 else f"python =={python}"


def solve_conda(specs: Sequence[str], channels: Sequence[str], platform: Platform, *,
                python: str | None, cuda: str | None = None,
                virtual_packages: Sequence[VirtualPackage] | None = None,
                cache_dir: Path | None = None,
                preferences: Sequence[LockedCondaPackage] = ()) -> tuple[LockedCondaPackage, ...]:
    """Solve match specs for ``platform`` from ``channels`` (strict priority), sorted by name.

    ``virtual_packages`` replaces the target's defaults, which ``cuda`` extends otherwise.
    ``preferences`` (the previous lock's packages) are kept where the specs still allow
    them: rattler's locked packages, looked up in the channels by their URL (one the
    channels no longer hold is no preference). No channels means conda-forge. Any failure
    is a ResolveError.
    """
    urls = [channel_url(c) for c in channels or DEFAULT_CHANNELS]
    wanted = [*specs, *([python_spec(python)] if python else [])]
    for spec in wanted:
        try:
            rattler.MatchSpec(spec)
        except InvalidMatchSpecError as exc:
            raise ResolveError(f"invalid conda package spec {spec!r}: {exc}") from None
    virtual = (tuple(virtual_packages) if virtual_packages is not None
               else default_virtual_packages(platform, cuda=cuda))
    for package in virtual:
        _rattler_virtual(package)  # a bad one is refused here, before the child starts
    cache = cache_dir if cache_dir is not None else envforge_dirs().cache / "rattler"
    return _solve_in_child(wanted, urls, platform, virtual, cache,
                           preferred={p.name: p.url for p in preferences})


def _solve_in_child(wanted: list[str], urls: list[str], platform: Platform,
                    virtual: Sequence[VirtualPackage], cache: Path,
                    preferred: Mapping[str, str] | None = None) -> tuple[LockedCondaPackage, ...]:
    """Solve in a child Python that leaves with ``os._exit``.

    rattler's tokio threads outlive a failed solve (the other subdirs' downloads go on) and
    take the GIL when they finish; if that happens while the interpreter finalises, Python
    dies with "PyGILState_Release" (SIGABRT) or SIGSEGV (issue 10 #10: 4 in 39 runs of
    ``lock`` with conda unreachable). A child that never finalises cannot crash that way,
    and envforge's own process never starts rattler's runtime.
    """
    request = {"wanted": wanted, "urls": urls, "platform": platform, "cache": str(cache),
               "virtual": [[v.name, v.version, v.build] for v in virtual],
               "preferred": dict(preferred or {})}
    done = subprocess.run([sys.executable, "-m", "envforge.resolve.conda"],
                          input=json.dumps(request), capture_output=True, text=True,
                          check=False)
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = _one_line(done.stderr)[-300:] or f"exit status {done.returncode}"
        raise ResolveError(f"the conda solver for {platform} failed: {tail}") from None
    if "error" in answer:
        raise ResolveError(answer["error"])
    return tuple(LockedCondaPackage.model_validate(r) for r in answer["records"])


def _solve_here(wanted: list[str], urls: list[str], platform: Platform,
                virtual: Sequence[VirtualPackage], cache: Path,
                preferred: Mapping[str, str] | None = None) -> tuple[LockedCondaPackage, ...]:
    rattler_virtual = [_rattler_virtual(v) for v in virtual]
    try:
        records = asyncio.run(_solve(wanted, urls, platform, rattler_virtual, cache, preferred))
    except SolverError as exc:
        reason = _one_line(str(exc).removeprefix("Cannot solve the request because of:"))
        raise ResolveError(f"no conda solution for {platform} from {', '.join(urls)}: "
                           f"{reason}{_virtual_hint(reason, platform, virtual)}") from None
    except (GatewayError, FetchRepoDataError) as exc:
        detail = _one_line(str(exc))
        named = [u for u in urls if u + "/" in detail or detail.endswith(u)] or urls
        which = "conda channel " + " or ".join(named)
        raise ResolveError(f"{which} is unreachable or not a channel (solving for {platform}): "
                           f"{detail}") from None
    return tuple(sorted((_locked(r) for r in records), key=lambda p: p.name))


def _rattler_virtual(package: VirtualPackage) -> Any:
    try:
        return rattler.GenericVirtualPackage(rattler.PackageName(package.name),
                                             rattler.Version(package.version),
                                             rattler.BuildString(package.build))
    except (InvalidPackageNameError, InvalidVersionError, ValueError) as exc:
        raise ResolveError(f"invalid virtual package {package}: {exc}") from None


async def _solve(specs: list[str], urls: list[str], platform: Platform,
                 virtual: list[Any], cache: Path,
                 preferred: Mapping[str, str] | None = None) -> list[Any]:
    """``preferred``: name -> the URL of the record to keep where the specs allow it."""
    gateway = rattler.Gateway(cache_dir=cache)
    sources = [rattler.Channel(u) for u in urls]
    locked: list[Any] = []
    if preferred:
        found = await gateway.query(sources, [platform, "noarch"], sorted(preferred),
                                    recursive=False)
        urls_kept = set(preferred.values())
        locked = [r for records in found for r in records if str(r.url) in urls_kept]
    return list(await rattler.solve(
        sources=sources,
        specs=specs,
        gateway=gateway,
        platforms=[platform, "noarch"],
        locked_packages=locked,
        virtual_packages=virtual,
        # Solve against exactly the channels the spec names (CEP-42 relations off).
        channel_relations="disabled",
    ))


def _locked(record: Any) -> LockedCondaPackage:
    url = str(record.url)
    channel = str(record.channel or url.rsplit("/", 2)[0]).rstrip("/")
    if not record.sha256:
        raise ResolveError(f"{record.file_name} from {channel} has no sha256 in the channel's "
                           "index; envforge locks only packages it can check")
    if not record.md5:
        raise ResolveError(f"{record.file_name} from {channel} has no md5 in the channel's index")
    return LockedCondaPackage(
        name=record.name.normalized,
        version=str(record.version),
        build=str(record.build),
        build_number=int(record.build_number),
        channel=channel,
        subdir=str(record.subdir),
        filename=str(record.file_name),
        url=url,
        sha256=bytes(record.sha256).hex(),
        md5=bytes(record.md5).hex(),
        size=None if record.size is None else int(record.size),
        depends=tuple(str(d) for d in record.depends),
    )


_TREE = "└├│─ \t"


def _one_line(text: str) -> str:
    """rattler's multi-line reasons (trees, 'Caused by' chains) as one line."""
    out = ""
    for raw in text.strip().splitlines():
        part = raw.strip().lstrip(_TREE).strip()
        if not part:
            continue
        if part.startswith("Caused by:"):
            out += "; caused by:" + part.removeprefix("Caused by:")
        elif out:
            # A tree line continues its parent's sentence; a finished sentence starts anew.
            out += ("; " if out.endswith(".") else " ") + part
        else:
            out = part
    return out


def _virtual_hint(reason: str, platform: Platform, virtual: Sequence[VirtualPackage]) -> str:
    if not re.search(r"(?<![\w-])__\w+", reason):
        return ""
    hint = (f" (virtual packages assumed for {platform}: "
            f"{', '.join(str(v) for v in virtual) or 'none'}")
    if "__cuda" in reason and not any(v.name == "__cuda" for v in virtual):
        hint += "; set [cuda] version in the spec to provide __cuda"
    return hint + ")"


def _child() -> None:
    """``python -m envforge.resolve.conda``: one solve, request on stdin, answer on stdout."""
    request = json.loads(sys.stdin.read())
    try:
        records = _solve_here(request["wanted"], request["urls"], request["platform"],
                              [VirtualPackage(*v) for v in request["virtual"]],
                              Path(request["cache"]), request.get("preferred"))
        answer: dict[str, Any] = {"records": [r.model_dump(mode="json") for r in records]}
    except ResolveError as exc:
        answer = {"error": str(exc)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no interpreter finalisation while rattler's threads may still run


if __name__ == "__main__":
    _child()

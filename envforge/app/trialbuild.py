"""init's trial build of what the draft resolves to only as an sdist, the way apply builds it.

uv reads an sdist's metadata without building it (pydensecrf 1.0rc3's ``setup.py egg_info``
runs; its Cython does not compile), so a draft that resolves may still not install. Each
such sdist is built once, through apply's own build (``bundle/wheels.py``), in the build
environment and for the Python the lock will record: the wheel lands in the host's build
cache under the key apply looks up, and the later apply builds nothing. A requirement list
whose every file is a wheel costs nothing here. Within init's deadline only: a build not
started (or cut) for time is said as not checked, never as built.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envforge.errors import EnvforgeError
from envforge.host.interpreters import minor

if TYPE_CHECKING:
    from envforge.lockfile import LockedPypiFile, PlatformLock
    from envforge.spec import Platform

Say = Callable[[str], None]

BUILD_MIN_S = 10.0  # below this much time left, an uncached build is not started


@dataclass(frozen=True)
class BuildFailure:
    """A resolved sdist whose build failed, and the build log's line that says why."""

    name: str
    version: str
    reason: str


@dataclass(frozen=True)
class Trial:
    """What the trial builds found: the sdists built (or found built in the cache), the first
    that failed (the draft changes before the rest matter), and why any was not tried."""

    built: tuple[str, ...] = ()  # name==version
    failed: BuildFailure | None = None
    unchecked: str | None = None


def sdists(plock: PlatformLock) -> tuple[LockedPypiFile, ...]:
    return tuple(f for f in plock.pypi if f.kind == "sdist")


def trial_builds(plock: PlatformLock, platform: Platform, *, deadline: float | None,
                 say: Say = lambda _: None, environ: Mapping[str, str] | None = None,
                 ) -> Trial:
    """Each of ``plock``'s sdists built for its Python into envforge's build cache (a cached
    build is only checked), until one fails; none is started on another platform than this
    host's, with no Python of the target's minor here, or past ``deadline`` (less than
    BUILD_MIN_S left): the Trial then says which were not tried and why. The caller bounds
    the whole by the deadline (a build under way when it comes is ended)."""
    files = sdists(plock)
    if not files:
        return Trial()
    from envforge.bundle.wheels import build_interpreter, build_sdist_wheel, cached_built_wheel
    from envforge.host.fetch import FileRef, obtain
    from envforge.paths import envforge_dirs
    from envforge.platforms import host_platform

    cache = envforge_dirs().cache
    env = dict(os.environ if environ is None else environ)
    names = ", ".join(f"{f.name}=={f.version}" for f in files)
    if platform != host_platform().name:
        return Trial(unchecked=f"{names} would be built from source, which only a {platform} "
                               "host can try")
    built: list[str] = []
    for at, f in enumerate(files):
        pin = f"{f.name}=={f.version}"
        rest = ", ".join(f"{g.name}=={g.version}" for g in files[at:])
        if cached_built_wheel(cache, f.sha256, plock.python, plock.build, platform,
                              plock.deb) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left < BUILD_MIN_S:
                return Trial(tuple(built), unchecked=f"init's time bound ran out before "
                             f"building {rest} from source; give more with --timeout")
            if not build_interpreter(plock.python, env, cache=cache)[1]:
                return Trial(tuple(built), unchecked=f"{rest} would be built from source, and "
                             f"this host has no Python {minor(plock.python)} to build with")
            say(f"building {pin} from its sdist, as apply will…")
        try:
            archive = obtain(FileRef(f.url, f.sha256, f.filename, f.size), cache=cache)
        except EnvforgeError as exc:  # no network: the build says nothing either way
            return Trial(tuple(built), unchecked=f"{rest}: its sdist could not be had ({exc})")
        try:
            build_sdist_wheel(f, archive, target_python=plock.python, platform=platform,
                              cache=cache, environ=env, build=plock.build, debs=plock.deb)
        except EnvforgeError as exc:
            return Trial(tuple(built), BuildFailure(f.name, f.version, build_reason(exc)))
        built.append(pin)
    return Trial(tuple(built))


_COMPILED = re.compile(r"^\S+\.(?:c|cc|cpp|cxx|h|hpp|pyx|pxd|pxi|f|f90|for|cu):\d+(?::\d+)?: ")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception): ")
_GENERIC = ("error: command", "error: Failed to build", "Cython.Compiler.Errors.CompileError",
            "distutils.errors.", "subprocess.CalledProcessError")


def build_reason(error: EnvforgeError) -> str:
    """The line of a failed build's log that says why: the first compiler error (gcc's
    ``x.cpp:12:5: error: …``, Cython's ``x.pxd:1:0: 'eigen.pxd' not found``: the rest follow
    from it), else the last exception a Python build script raised, else the log's last line
    besides uv's own."""
    from envforge.bundle.wheels import BuildFailedError

    log = (error.log if isinstance(error, BuildFailedError) else "") or str(error)
    lines = [ln.strip() for ln in log.splitlines()
             if ln.strip() and not ln.startswith("DEBUG ")]
    for line in lines:
        if _COMPILED.match(line) and (line.split(":")[0].endswith((".pyx", ".pxd", ".pxi"))
                                      or "error" in line.lower()):
            return line
    for line in reversed(lines):
        if _EXCEPTION.match(line) and not line.startswith(_GENERIC):
            return line
    own = [ln for ln in lines if not ln.startswith(("error:", "cause:", "Caused by:", "hint:"))
           and not ln.startswith(_GENERIC)]
    return (own or lines or [str(error)])[-1]

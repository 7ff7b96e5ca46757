"""The Debian headers and libraries an sdist's build compiles and links against.

PyAudio's C extension includes ``portaudio.h`` and links ``-lportaudio``, which no PyPI
wheel gives and Debian's ``portaudio19-dev`` does. A lock whose [debian] holds a ``-dev``
package hands its ``-dev`` packages and what they depend on to each of its sdist builds:
unpacked (verified .debs) into the build's own temporary folder, whose include folders the
compiler searches after the host's (``-idirafter``: the host's libc headers keep precedence
over Debian's) and whose library folders the linker searches. The wheel built so is cached
under a key that names those packages (``buildcache.build_key``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from envforge.lockfile import LockedDeb

DEV_SUFFIX = "-dev"  # Debian's name for a package of headers and link-time libraries


def build_debs(debs: Sequence[LockedDeb]) -> tuple[LockedDeb, ...]:
    """The packages a build is handed: the lock's ``-dev`` packages and what they depend on in
    the lock, on and on (the libraries their ``libX.so`` links name: PortAudio's for
    portaudio19-dev); none where the lock has no ``-dev`` package. Not the rest: a CUDA
    toolkit beside ``libgpuarray-dev`` is no build's business."""
    queue = [d.name for d in debs if d.name.endswith(DEV_SUFFIX)]
    if not queue:  # every apply of a lock with an sdist asks: Debian's parser not imported
        return ()
    from envforge.resolve.deb.selection import parse_relations

    by_name = {d.name: d for d in debs}
    handed: set[str] = set()
    while queue:
        name = queue.pop()
        if name in handed or name not in by_name:
            continue
        handed.add(name)
        try:
            groups = parse_relations(by_name[name].depends)
        except ValueError:
            continue
        queue += [alt.name for group in groups for alt in group]
    return tuple(sorted((by_name[n] for n in handed), key=lambda d: (d.name, d.sha256)))


def debs_digest(debs: Sequence[LockedDeb]) -> str | None:
    """What names the packages a build is handed (None: none are)."""
    wanted = build_debs(debs)
    if not wanted:
        return None
    text = "\n".join(sorted(d.sha256 for d in wanted))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def sysroot(folder: Path, debs: Sequence[LockedDeb],
            fetch: Callable[[LockedDeb], Path]) -> Path | None:
    """``folder`` with the build's packages unpacked in it (None: no package is handed, and
    nothing is made): ``fetch`` gives each verified .deb. Made for each build, in its own
    temporary folder, never kept: a folder of headers kept in the cache could be edited
    between builds where no check would see it, and a build is rare (its wheel is kept)."""
    from envforge.host.debunpack import unpack_deb

    wanted = build_debs(debs)
    if not wanted:
        return None
    folder.mkdir(parents=True)
    for deb in wanted:
        unpack_deb(fetch(deb), folder)
    return folder


def build_environ(environ: Mapping[str, str], root: Path) -> dict[str, str]:
    """``environ`` with the compiler and linker flags that reach ``root``'s headers and
    libraries: distutils and setuptools add ``CFLAGS`` to each compile and ``LDFLAGS`` to
    each link. The folders are those activation puts on the library path (``envlayout``)."""
    from envforge.envlayout import deb_include_dirs, deb_lib_dirs

    env = dict(environ)
    cflags = " ".join(f"-idirafter {folder}" for folder in deb_include_dirs(root))
    ldflags = " ".join(f"-L{folder} -Wl,-rpath-link,{folder}" for folder in deb_lib_dirs(root))
    env["CFLAGS"] = f"{env.get('CFLAGS', '')} {cflags}".strip()
    env["LDFLAGS"] = f"{env.get('LDFLAGS', '')} {ldflags}".strip()
    return env

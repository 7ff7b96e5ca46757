"""The Debian headers and libraries an sdist's build compiles and links against.

PyAudio's C extension includes ``portaudio.h`` and links ``-lportaudio``, which no PyPI
wheel gives and Debian's ``portaudio19-dev`` does. A lock whose [debian] holds a ``-dev``
package hands its Debian packages to each of its sdist builds: unpacked once into a folder of
the cache that the packages' sha256s name (made aside, then moved in whole), whose include
folders the compiler searches after the host's (``-idirafter``: the host's libc headers keep
precedence over Debian's) and whose library folders the linker searches. The wheel built so is
cached under a key that names those packages (``buildcache.build_key``).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from envforge.lockfile import LockedDeb

DEV_SUFFIX = "-dev"  # Debian's name for a package of headers and link-time libraries
SYSROOTS = "build-sysroots"
COMPLETE = ".envforge-complete"
TRIPLET = "x86_64-linux-gnu"  # linux-64's multiarch folders, the only Debian platform


def build_debs(debs: Sequence[LockedDeb]) -> tuple[LockedDeb, ...]:
    """The packages a build is handed: the lock's ``-dev`` packages and what they depend on in
    the lock, on and on (the libraries their ``libX.so`` links name: PortAudio's for
    portaudio19-dev); none where the lock has no ``-dev`` package. Not the rest: a CUDA
    toolkit beside ``libgpuarray-dev`` is no build's business."""
    from envforge.resolve.deb.selection import parse_relations

    by_name = {d.name: d for d in debs}
    queue = [d.name for d in debs if d.name.endswith(DEV_SUFFIX)]
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


def sysroot(cache: Path, debs: Sequence[LockedDeb],
            fetch: Callable[[LockedDeb], Path]) -> Path | None:
    """The folder the build's packages are unpacked in (None: no package is handed), made
    once: ``fetch`` gives each verified .deb."""
    from filelock import FileLock

    from envforge.host.debunpack import unpack_deb

    digest = debs_digest(debs)
    if digest is None:
        return None
    root = cache / SYSROOTS / digest
    if (root / COMPLETE).is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{root}.lock"):
        if (root / COMPLETE).is_file():
            return root
        if root.exists():  # a folder an earlier run left unfinished
            shutil.rmtree(root)
        scratch = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=root.parent))
        try:
            for deb in build_debs(debs):
                unpack_deb(fetch(deb), scratch)
            (scratch / COMPLETE).write_text("".join(f"{d.filename} {d.sha256}\n"
                                                    for d in build_debs(debs)))
            scratch.replace(root)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    return root


def build_environ(environ: Mapping[str, str], root: Path) -> dict[str, str]:
    """``environ`` with the compiler and linker flags that reach ``root``'s headers and
    libraries: distutils and setuptools add ``CFLAGS`` to each compile and ``LDFLAGS`` to
    each link."""
    include = [root / "usr" / "include" / TRIPLET, root / "usr" / "include"]
    libs = [root / "usr" / "lib" / TRIPLET, root / "usr" / "lib", root / "lib" / TRIPLET]
    env = dict(environ)
    cflags = " ".join(f"-idirafter {folder}" for folder in include)
    ldflags = " ".join(f"-L{folder} -Wl,-rpath-link,{folder}" for folder in libs)
    env["CFLAGS"] = f"{env.get('CFLAGS', '')} {cflags}".strip()
    env["LDFLAGS"] = f"{env.get('LDFLAGS', '')} {ldflags}".strip()
    return env

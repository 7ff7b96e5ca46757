"""The locked PyPI files installed into the environment, each checked by its sha256.

Online with uv: ``uv pip install --require-hashes --no-deps``, exactly the locked files,
nothing resolved; an sdist (Theano-PyMC has no wheel) is built by uv with the environment's
own interpreter. From a bundle or ``--offline`` (or without uv), no resolver and no build
backend may be needed: the verified wheels, and the wheels a bundle built from the sdists,
are unpacked by pypa's ``installer`` (``host/wheelinstall.py``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name

from envforge.errors import EnvforgeError
from envforge.host import proc
from envforge.host.fetch import FileRef, cache_path, obtain
from envforge.journal import Transaction
from envforge.lockfile import LockedPypiFile
from envforge.resolve.pypi import uv_binary, uv_environ
from envforge.steps.base import Change, StepContext


def installed_distributions(site_packages: Path) -> dict[str, str]:
    """name -> version of what is installed, read from ``*.dist-info`` folder names only."""
    found: dict[str, str] = {}
    if not site_packages.is_dir():
        return found
    for entry in site_packages.glob("*.dist-info"):
        stem = entry.name[: -len(".dist-info")]
        name, _, version = stem.partition("-")
        found[canonicalize_name(name)] = version
    return found


def missing_files(ctx: StepContext,
                  installed: dict[str, str] | None = None) -> list[LockedPypiFile]:
    if installed is None:
        installed = installed_distributions(Path(ctx.layout.site_packages))
    return [f for f in ctx.lock.pypi if installed.get(canonicalize_name(f.name)) != f.version]


def _uv() -> str | None:
    try:
        return uv_binary()
    except EnvforgeError:
        return None


def requirement_line(ctx: StepContext, f: LockedPypiFile) -> str:
    """The copy apply's prefetch put in envforge's cache (checked), else the index's by name
    and version; a git, local or find-links file always by its verified copy (the index has
    no such file to look up)."""
    ref = FileRef(f.url, f.sha256, f.filename, f.size)
    if f.origin is not None:
        return f"{f.name} @ {obtain(ref, cache=ctx.dirs.cache).as_uri()}"
    cached = cache_path(ctx.dirs.cache, ref)
    return f"{f.name} @ {cached.as_uri()}" if cached.is_file() else f"{f.name}=={f.version}"


class PypiInstallStep:
    name = "pypi-packages"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        installed = installed_distributions(Path(ctx.layout.site_packages))
        return tuple(
            Change(action="replace" if canonicalize_name(f.name) in installed else "create",
                   target=f"{ctx.layout.site_packages}/{f.name}",
                   before=installed.get(canonicalize_name(f.name)), after=f.version,
                   detail=f"{f.filename} (sha256 {f.sha256[:12]}…)")
            for f in missing_files(ctx, installed))

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        todo = missing_files(ctx)
        if not todo:
            return
        uv = None if ctx.bundle is not None or ctx.offline else _uv()
        if uv is None:
            from envforge.bundle.sources import pypi_wheels
            from envforge.host.wheelinstall import install_wheels

            install_wheels(pypi_wheels(ctx, todo), Path(ctx.layout.python))
            return
        with tempfile.TemporaryDirectory(prefix="envforge-req-") as tmp:
            req = Path(tmp) / "requirements.txt"
            req.write_text("".join(f"{requirement_line(ctx, f)} --hash=sha256:{f.sha256}\n"
                                   for f in todo), encoding="utf-8")
            args = [uv, "pip", "install", "--python", str(ctx.layout.python),
                    "--no-deps", "--require-hashes", "--no-config", "-r", str(req),
                    "--index-url", ctx.pypi_index,
                    # byte-compile now, so the first verify or import does not pay for it
                    "--compile-bytecode"]
            for extra_index in ctx.pspec.pypi.extra_indexes:  # files stay pinned by hash
                args += ["--extra-index-url", extra_index]
            if ctx.pspec.pypi.build_constraints:  # the same build pins as at lock time
                pins = Path(tmp) / "build-constraints.txt"
                pins.write_text("\n".join(ctx.pspec.pypi.build_constraints) + "\n",
                                encoding="utf-8")
                args += ["--build-constraints", str(pins)]
            env = uv_environ(ctx.environ)
            proc.run(args, env=env)

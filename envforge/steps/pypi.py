"""The locked PyPI files installed into the environment, each checked by its sha256.

Online, from a bundle or ``--offline`` alike: each locked file comes from envforge's
content-addressed cache or the bundle, re-hashed against the lock on every use (uv's own
cache, which uv trusts without re-hashing its unpacked files, is not an install source); an
sdist (Theano-PyMC has no wheel) is built into a wheel once, with the environment's Python
and the lock's build table (the spec's build constraints), and every file of that wheel is
checked against the sdist. Each wheel is unzipped once into envforge's cache and linked
from there (``host/unpacked.py``, ``host/wheelinstall.py``): no resolver, and no build
backend when a wheel is at hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from packaging.utils import canonicalize_name

from envforge.journal import Transaction
from envforge.lockfile import LockedPypiFile
from envforge.steps.base import Change, StepContext, scheme_memo, unpacked_cache


def installed_distributions(site_packages: Path) -> dict[str, str]:
    """name -> version of what is installed, read from ``*.dist-info`` folder names.

    One without its RECORD, which installer writes last, is an install a signal or a crash
    cut short (files after its ``.dist-info`` in the wheel, e.g. NumPy's ``numpy.libs/``,
    never came): not installed, so apply again installs it whole."""
    found: dict[str, str] = {}
    if not site_packages.is_dir():
        return found
    for entry in site_packages.glob("*.dist-info"):
        if not (entry / "RECORD").is_file():
            continue
        stem = entry.name[: -len(".dist-info")]
        name, _, version = stem.partition("-")
        found[canonicalize_name(name)] = version
    return found


def missing_files(ctx: StepContext,
                  installed: dict[str, str] | None = None) -> list[LockedPypiFile]:
    if installed is None:
        installed = installed_distributions(Path(ctx.layout.site_packages))
    return [f for f in ctx.lock.pypi if installed.get(canonicalize_name(f.name)) != f.version]


def _stale(ctx: StepContext) -> list[str]:
    """What an earlier apply installed that this lock no longer names (re-locked: a
    dependency dropped); a user's own installs stay, for ``apply --sync``."""
    from envforge.drift import stale_distributions

    return stale_distributions(Path(ctx.layout.site_packages), ctx.lock.pypi,
                               also_expected=[c.name for c in ctx.lock.conda])


def say_skipped_pycache(ctx: StepContext, skipped: Mapping[str, int]) -> None:
    """One line per wheel that carried compiled files under ``__pycache__/``: skipped, as
    pypa's installer skips them (bytecode no RECORD ties to its source; pip copies them)."""
    for distribution, count in sorted(skipped.items()):
        ctx.ui.info(f"{distribution}: {count} file(s) its wheel carries under __pycache__/ "
                    "not installed (compiled bytecode: Python writes its own)")


class PypiInstallStep:
    name = "pypi-packages"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        site = Path(ctx.layout.site_packages)
        installed = installed_distributions(site)
        return (*(Change(action="remove", target=f"{site}/{name}",
                         before=installed.get(canonicalize_name(name)), after=None,
                         detail="an earlier lock's, not in this one")
                  for name in _stale(ctx)),
                *(Change(action="replace" if canonicalize_name(f.name) in installed
                         else "create",
                         target=f"{site}/{f.name}",
                         before=installed.get(canonicalize_name(f.name)), after=f.version,
                         detail=f"{f.filename} (sha256 {f.sha256[:12]}…)")
                  for f in missing_files(ctx, installed)))

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        stale = _stale(ctx)
        if stale:  # inside the prefix, envforge's own: rollback removes it whole
            from envforge.host.wheelinstall import target_scheme
            from envforge.host.wheelremove import remove_distributions

            remove_distributions(target_scheme(Path(ctx.layout.python),
                                               memo=scheme_memo(ctx)), stale)
        todo = missing_files(ctx)
        if not todo:
            return
        from envforge.host.wheelinstall import install_wheels

        skipped: Counter[str] = Counter()
        install_wheels(ctx.sources.pypi_wheels(ctx, todo), Path(ctx.layout.python),
                       cache=unpacked_cache(ctx), schemes=scheme_memo(ctx), skipped=skipped)
        say_skipped_pycache(ctx, skipped)

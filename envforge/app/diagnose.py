"""What ``envforge doctor`` judges: this host observed once, against a spec's lock if given.

The lock's own problems (missing, stale, no section for this host) are findings too, so a
stale lock still gets the host judged rather than refused as apply would.
"""

from __future__ import annotations

from pathlib import Path

from envforge.app.context import default_prefix
from envforge.app.packs import installed_packs
from envforge.app.project import Project
from envforge.doctor import (
    Expected,
    Finding,
    HostFacts,
    diagnose,
    expected_from_lock,
    judged,
    observe,
)
from envforge.doctor.model import Evidence, Fix, sort_findings
from envforge.errors import InputError
from envforge.host.windows import host_registry
from envforge.lockcheck import stale_reasons
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.paths import envforge_dirs
from envforge.platforms import host_platform
from envforge.spec import Platform


def _expectations(spec_arg: str, prefix_arg: Path | None, environ: dict[str, str],
                  platform: Platform, packs: Registry[FrameworkPack],
                  ) -> tuple[Expected | None, Path, list[Finding]]:
    """The lock's expectations, the environment's prefix, and findings about the lock itself."""
    project = Project.load(spec_arg, registry=packs)
    spec, spec_path, lock_path = project.spec, project.spec_path, project.lock_path
    if platform not in spec.project.platforms:
        raise InputError(f"{spec_path}: this host is {platform}, which the spec does not target")
    prefix = (prefix_arg or default_prefix(spec, envforge_dirs(environ), platform)).absolute()
    lock = project.previous_lock()
    if lock is None:
        return None, prefix, [Finding(
            id="lock.missing", severity="warning",
            title=f"{spec_path} has no lock at {lock_path}: nothing to compare the host with",
            fix=Fix(text=f"envforge lock {spec_path}"), source=str(spec_path))]
    findings = [Finding(
        id="lock.stale", severity="warning",
        title=f"{lock_path} is stale ({reason}); the host is judged against it anyway",
        evidence=(Evidence(kind="file", where=str(lock_path), text=lock.meta.spec_hash),),
        fix=Fix(text=f"envforge lock {spec_path}"), source=str(lock_path))
        for reason in stale_reasons(spec, lock)]
    expected = expected_from_lock(spec, lock, platform, prefix, project.registry)
    if expected is None:
        findings.append(Finding(
            id="lock.platform", severity="warning",
            title=f"{lock_path} has no {platform} section", source=str(lock_path),
            fix=Fix(text=f"envforge lock {spec_path}")))
    return expected, prefix, findings


def examine(spec: str | None, prefix: Path | None, *, environ: dict[str, str], cwd: Path,
            packs: Registry[FrameworkPack] | None = None,
            ) -> tuple[HostFacts, tuple[Finding, ...], Expected | None]:
    """Observe this host and judge it with ``packs`` (the installed ones unless given; of
    those, with a spec, the ones its lock mounts: a torch spec's host is not judged by
    Theano's rules); what ``envforge doctor`` shows."""
    packs = packs if packs is not None else installed_packs()
    platform = host_platform().name
    lock_findings: list[Finding] = []
    if spec is None:
        expected, env_prefix = None, prefix
    else:
        expected, env_prefix, lock_findings = _expectations(spec, prefix, environ, platform,
                                                            packs)
    if expected is not None:  # a spec's host is judged by the packs its lock mounts
        packs = Registry(packs.locked(expected.settings))
    python = expected.versions.get("python", "3.7") if expected else "3.7"
    facts = observe(environ=environ, platform=platform, cwd=cwd,
                    prefix=env_prefix.absolute() if env_prefix else None,
                    prefix_from="spec" if spec else "--prefix",
                    python=python, expected_settings=expected.settings if expected else None,
                    registry=host_registry(), packs=packs)
    facts = judged(facts, expected, packs)  # shown too: which framework wants the GPU
    findings = sort_findings([*lock_findings, *diagnose(facts, expected, packs=packs)])
    return facts, findings, expected

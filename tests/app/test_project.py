"""The application layer on the repository's real specs and locks: a project, its lock's
freshness, and the context a run gets (platform, prefix, state, sources) from host and options."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envforge.app.context import Host, Options, context_for, locked_context
from envforge.app.project import Project
from envforge.bundle.sources import LockedSources
from envforge.errors import InputError, SpecError, StaleLockError
from envforge.lockfile import ApplyInputs, dumps_lock, load_lock
from envforge.packs.theano.expect import theano_expect
from envforge.plan import build_steps, make_plan
from envforge.spec import Platform
from envforge.steps.base import StepContext

REPO = Path(__file__).resolve().parents[2]


def _host(tmp: Path, platform: Platform = "linux-64") -> Host:
    return Host(platform=platform, environ={"ENVFORGE_HOME": str(tmp / "home")},
                home=tmp)


def _copy(tmp: Path, name: str) -> Path:
    (tmp / "specs").mkdir(exist_ok=True)
    (tmp / "locks").mkdir(exist_ok=True)
    spec = tmp / "specs" / f"{name}.toml"
    shutil.copy(REPO / "specs" / f"{name}.toml", spec)
    shutil.copy(REPO / "locks" / f"{name}.lock", tmp / "locks" / f"{name}.lock")
    return spec


def test_a_project_finds_its_lock_beside_the_specs_folder(tmp_path: Path) -> None:
    project = Project.load(_copy(tmp_path, "theano-cpu"))
    assert project.lock_path == tmp_path / "locks" / "theano-cpu.lock"
    assert project.stale_reasons() == []
    assert project.fresh_lock().meta.spec_name == "theano-cpu"


def test_a_changed_spec_makes_its_lock_stale(tmp_path: Path) -> None:
    spec = _copy(tmp_path, "theano-cpu")
    text = spec.read_text(encoding="utf-8")
    assert "seed = 22" in text
    spec.write_text(text.replace("seed = 22", "seed = 23"), encoding="utf-8")
    project = Project.load(spec)
    assert any("the spec changed since it was locked" in r for r in project.stale_reasons())
    with pytest.raises(StaleLockError, match="run `envforge lock"):
        project.fresh_lock()


def test_no_lock_is_a_reason_not_an_error(tmp_path: Path) -> None:
    spec = _copy(tmp_path, "theano-cpu")
    (tmp_path / "locks" / "theano-cpu.lock").unlink()
    assert Project.load(spec).stale_reasons() == ["no lock file"]


def test_the_context_has_the_host_platform_prefix_state_and_sources(tmp_path: Path) -> None:
    project = Project.load(_copy(tmp_path, "theano-cpu"))
    ctx = context_for(project, _host(tmp_path), Options(prefix=tmp_path / "env"))
    assert (ctx.platform, ctx.prefix, ctx.home) == ("linux-64", tmp_path / "env", tmp_path)
    assert ctx.state_dir.parent == tmp_path / "home" / "state"
    assert ctx.lock == project.fresh_lock().platforms["linux-64"]
    assert isinstance(ctx.sources, LockedSources)
    default = context_for(project, _host(tmp_path), Options())
    assert default.prefix == tmp_path / "home" / "data" / "envs" / "theano-cpu"


def test_a_host_the_spec_does_not_target_is_refused(tmp_path: Path) -> None:
    project = Project.load(_copy(tmp_path, "theano-cpu-debian"))
    with pytest.raises(InputError, match="this host is win-64, which the spec does not target"):
        context_for(project, _host(tmp_path, "win-64"), Options())


def test_an_artifact_the_lock_does_not_use_is_refused(tmp_path: Path) -> None:
    project = Project.load(_copy(tmp_path, "theano-cpu"))
    archive = tmp_path / "cudnn.zip"
    archive.write_bytes(b"PK")
    with pytest.raises(InputError, match="locks no cudnn archive"):
        context_for(project, _host(tmp_path), Options(artifacts={"cudnn": archive}))


def _plan(ctx: StepContext) -> list[tuple[str, tuple[str, ...]]]:
    plan = make_plan(ctx, build_steps(ctx), spec="s")
    return [(s.step, tuple(c.target for c in s.changes)) for s in plan.steps]


def test_a_plan_is_the_lock_s_alone(tmp_path: Path) -> None:
    """Apply reads nothing of the spec past the check against it (issue 26): from the lock
    alone, the spec file gone, the context plans exactly what `apply SPEC` plans; and the
    plan follows the lock's apply table and pack settings, not the spec's: edited in the
    lock, the compiler step is gone and the rc file goes home. ``context_for``, which checks
    the lock against its spec, refuses that edited lock."""
    spec = _copy(tmp_path, "keras-theano-cpu")
    project = Project.load(spec)
    host = Host(platform="linux-64", home=tmp_path, environ={  # g++ for the compiler step
        "ENVFORGE_HOME": str(tmp_path / "home"), "PATH": os.environ.get("PATH", "")})
    options = Options(prefix=tmp_path / "env")
    full = context_for(project, host, options)
    lock = load_lock(project.lock_path, project.registry)
    spec.unlink()
    alone = locked_context(lock, project.lock_path, host, options, project.registry)
    assert alone.lock == full.lock and alone.state_dir == full.state_dir
    planned = _plan(alone)
    assert planned == _plan(full)
    steps = [step for step, _ in planned]
    assert {"compiler", "theanorc", "keras-json", "activation"} <= set(steps)

    plock = lock.platforms["linux-64"]
    theano = theano_expect(plock.expect).model_copy(update={"theanorc": "home"})
    edited = lock.model_copy(update={"platforms": {**lock.platforms, "linux-64": plock.model_copy(
        update={"apply": ApplyInputs(), "expect": plock.expect.model_copy(
            update={"packs": {**plock.expect.packs, "theano": theano}})})}})
    moved = dict(_plan(locked_context(edited, project.lock_path, host, options,
                                      project.registry)))
    assert "compiler" not in moved and moved["theanorc"] == (str(tmp_path / ".theanorc"),)
    shutil.copy(REPO / "specs" / "keras-theano-cpu.toml", spec)
    project.lock_path.write_text(dumps_lock(edited), encoding="utf-8")
    with pytest.raises(SpecError) as refused:
        context_for(project, host, options)
    assert refused.value.key == "platforms.linux-64.apply.compiler"

"""A pack is self-contained: a toy pack registered here, with its own spec section, compat
rule, lock table, step, activation variable and verify row, goes through spec -> lock ->
plan -> apply -> verify with no change to core code."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from envforge.compat import Pin, check_platform_spec
from envforge.envvars import EnvEdit
from envforge.errors import SpecError
from envforge.journal import Transaction
from envforge.lockcheck import check_lock
from envforge.lockfile import Expectations, Lockfile, dumps_lock, load_lock
from envforge.lockplan import expectations_for
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.packs.base import Migration, PackDefaults, Report
from envforge.plan import build_steps, make_plan
from envforge.spec import Frozen, PlatformSpec, parse_spec
from envforge.steps.activation import edits_for
from envforge.steps.base import Change, Step, StepContext, text_digest
from envforge.verify import CheckRow, build_request, check_report
from tests.testing.contexts import apply_step, make_ctx
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
SPEC_TEXT = (REPO / "specs" / "theano-cpu.toml").read_text(encoding="utf-8")
LOCK = REPO / "locks" / "theano-cpu.lock"


class ToySection(Frozen):
    greeting: str = "hello"


class ToyExpect(Frozen):
    greeting: str


def _greeting(pspec: PlatformSpec) -> str:
    section = pspec.packs["toy"]
    assert isinstance(section, ToySection)
    return section.greeting


class ToyStep:
    name = "toy"

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        target = Path(ctx.layout.prefix) / "toy.txt"
        text = _expect(ctx.lock.expect).greeting
        if target.is_file() and target.read_text() == text:
            return ()
        return (Change(action="create", target=str(target), before=None,
                       after=text_digest(text)),)

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        target = Path(ctx.layout.prefix) / "toy.txt"
        if not target.parent.exists():
            tx.mkdir(target.parent)
        tx.write_text(target, _expect(ctx.lock.expect).greeting)


class ToyPack(PackDefaults):
    name = "toy"
    section = ToySection
    expect = ToyExpect
    implicit = False
    knowledge = ()
    probe = None
    probe_modules = ()
    lock_migrations: ClassVar[Mapping[int, Migration]] = {}

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                      report: Report) -> None:
        if _greeting(pspec) == "boom":
            report("toy-boom", "a toy that says boom", "this test", "say something else")

    def expectations(self, pspec: PlatformSpec, versions: Mapping[str, str]) -> ToyExpect:
        return ToyExpect(greeting=_greeting(pspec))

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        return "cpu", "float64"

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        return (ToyStep(),)

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        return (EnvEdit(name="TOY_GREETING", op="set", value=_expect(ctx.lock.expect).greeting),)

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        return {"toy": _expect(expect).greeting}

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        wanted, found = _expect(expect).greeting, str(report.get("toy"))
        return (CheckRow("toy.greeting", wanted, found, "pass" if found == wanted else "fail"),)

    def doctor_rules(self) -> tuple[Any, ...]:
        return ()


def _expect(expect: Expectations) -> ToyExpect:
    table = expect.packs["toy"]
    assert isinstance(table, ToyExpect)
    return table


@pytest.fixture
def toy() -> Registry[FrameworkPack]:
    """The built-in packs and the toy: a registry handed down, no global patched."""
    return Registry([*REGISTRY, ToyPack()])


def _spec(greeting: str) -> str:
    return SPEC_TEXT + f'\n[toy]\ngreeting = "{greeting}"\n'


def test_a_registered_pack_goes_from_spec_to_verify(toy: Registry[FrameworkPack],
                                                    tmp_path: Path) -> None:
    spec = parse_spec(_spec("hi"), source="specs/theano-cpu.toml", registry=toy)
    pspec = spec.for_platform("linux-64")
    assert [p.name for p in toy.active(pspec.packs)] == ["theano", "toy"]
    assert pspec.packs["toy"] == ToySection(greeting="hi")
    assert check_platform_spec(pspec, toy) == []

    # lock: the pack's table is [platforms.linux-64.expect.toy] and reads back typed
    committed = load_lock(LOCK, toy)
    platforms = {}
    for name, plock in committed.platforms.items():
        expect = expectations_for(spec.for_platform(name), toy, dict(plock.expect.versions))
        platforms[name] = plock.model_copy(update={"expect": expect})
    meta = committed.meta.model_copy(update={"spec_hash": spec.content_hash})
    text = dumps_lock(Lockfile(meta=meta, platforms=platforms))
    assert '[platforms.linux-64.expect.toy]\ngreeting = "hi"\n' in text
    path = tmp_path / "locks" / "theano-cpu.lock"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    lock = load_lock(path, toy)
    assert lock.platforms["linux-64"].expect.packs["toy"] == ToyExpect(greeting="hi")
    check_lock(spec, lock, path, toy)

    # plan and apply: the pack's step sits before activation, its variable in activation
    base = make_ctx(tmp_path, "linux-64", None)
    ctx = dataclasses.replace(base, lock=lock.platforms["linux-64"], registry=toy)
    names = [s.name for s in build_steps(ctx)]
    assert names.index("toy") == names.index("theanorc") + 1 == names.index("activation") - 1
    step = next(s for s in build_steps(ctx) if s.name == "toy")
    plan = make_plan(ctx, [step], spec=spec.source)
    assert plan.pending
    apply_step(step, ctx)
    assert (tmp_path / "prefix" / "toy.txt").read_text() == "hi"
    assert step.describe(ctx) == ()
    assert EnvEdit(name="TOY_GREETING", op="set", value="hi") in edits_for(ctx)

    # verify: the request carries the pack's fields, its row judges the report
    expect = lock.platforms["linux-64"].expect
    assert build_request(expect, toy)["toy"] == "hi"
    rows = {r.name: r for r in check_report({"format": 1, "toy": "hi"}, expect, toy,
                                            gpu_expected=False)}
    assert rows["toy.greeting"].status == "pass"
    rows = {r.name: r for r in check_report({"format": 1, "toy": "bye"}, expect, toy,
                                            gpu_expected=False)}
    assert rows["toy.greeting"].status == "fail"


def test_a_pack_section_error_names_its_line_and_key(toy: Registry[FrameworkPack]) -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(SPEC_TEXT + '\n[toy]\ngreting = "hi"\n', source="t.toml", registry=toy)
    assert error.value.key == "toy.greting"
    assert error.value.line == SPEC_TEXT.count("\n") + 3


def test_a_pack_compat_rule_refuses_the_spec(toy: Registry[FrameworkPack]) -> None:
    pspec = parse_spec(_spec("boom"), source="t.toml", registry=toy).for_platform("linux-64")
    assert [c.rule for c in check_platform_spec(pspec, toy)] == ["toy-boom"]


def test_a_pack_not_implicit_is_mounted_only_by_its_section(toy: Registry[FrameworkPack]) -> None:
    pspec = parse_spec(SPEC_TEXT, source="t.toml", registry=toy).for_platform("linux-64")
    assert [p.name for p in toy.active(pspec.packs)] == ["theano"]
    with pytest.raises(SpecError, match="unknown section"):
        parse_spec(SPEC_TEXT + "\n[toy2]\n", source="t.toml", registry=toy)


def test_implicit_packs_stay_out_of_a_spec_naming_another_pack(
        toy: Registry[FrameworkPack]) -> None:
    """A second framework's spec (TensorFlow's) gets no .theanorc: Theano mounts by default
    only where no pack's section is named."""
    text = re.sub(r"(?ms)^\[theano(\.[^\]]*)?\]\n.*?(?=^\[)", "", SPEC_TEXT)
    assert "[theano" not in text
    text += '\n[toy]\ngreeting = "hi"\n'
    pspec = parse_spec(text, source="t.toml", registry=toy).for_platform("linux-64")
    assert [p.name for p in toy.active(pspec.packs)] == ["toy"]
    base = make_ctx(Path("/nonexistent"), "linux-64", None)
    packs = {pack.name: pack.expectations(pspec, {}) for pack in toy.active(pspec.packs)}
    ctx = dataclasses.replace(base, registry=toy, lock=base.lock.model_copy(update={
        "expect": base.lock.expect.model_copy(update={"packs": packs})}))
    names = [s.name for s in build_steps(ctx)]
    assert "theanorc" not in names and "toy" in names


def test_a_lock_table_of_an_unregistered_pack_is_refused(tmp_path: Path) -> None:
    text = LOCK.read_text(encoding="utf-8").replace(
        "[platforms.linux-64.expect.theano]\n",
        '[platforms.linux-64.expect.toy]\ngreeting = "hi"\n\n[platforms.linux-64.expect.theano]\n')
    path = tmp_path / "x.lock"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as error:
        load_lock(path, REGISTRY)
    assert error.value.key == "platforms.linux-64.expect.toy"

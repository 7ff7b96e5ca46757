"""Packs compose: a spec mounting two packs locks both packs' stack versions, verify runs
each pack's probe (the core's kernels in the first only) and judges their reports merged."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from envforge.app.verification import run_probes
from envforge.envvars import EnvEdit
from envforge.lockfile import Expectations, LockedPypiFile, load_lock
from envforge.lockplan import stack_versions
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.packs.base import Migration, PackDefaults, Report
from envforge.spec import Frozen, PlatformSpec, parse_spec
from envforge.steps.base import Step, StepContext
from envforge.verify import (
    REPORT_FORMAT,
    CheckRow,
    build_request,
    check_report,
    merge_reports,
    probe_scripts,
)
from tests.testing.contexts import make_ctx
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
SPEC_TEXT = (REPO / "specs" / "theano-cpu.toml").read_text(encoding="utf-8")
LOCK = REPO / "locks" / "theano-cpu.lock"


class AddOnSection(Frozen):
    word: str = "hello"


class AddOnExpect(Frozen):
    word: str


class AddOnPack(PackDefaults):
    """A pack on top of a framework: its own probe, reporting only its own part."""

    name = "addon"
    section = AddOnSection
    expect = AddOnExpect
    implicit = False
    knowledge = ()
    probe: Path | None = None
    probe_modules = ("addon",)
    stack_names: ClassVar[Mapping[str, str]] = {"addon-dist": "addon"}
    lock_migrations: ClassVar[Mapping[int, Migration]] = {}

    def compat_checks(self, pspec: PlatformSpec, pins: Mapping[str, Sequence[Any]],
                      report: Report) -> None:
        return None

    def expectations(self, pspec: PlatformSpec, versions: Mapping[str, str]) -> AddOnExpect:
        section = pspec.packs["addon"]
        assert isinstance(section, AddOnSection)
        return AddOnExpect(word=section.word)

    def kernel_device(self, pspec: PlatformSpec) -> tuple[str, str]:
        return "cpu", "float32"

    def steps(self, ctx: StepContext) -> Sequence[Step]:
        return ()

    def env_edits(self, ctx: StepContext) -> Sequence[EnvEdit]:
        return ()

    def probe_request(self, expect: Expectations) -> Mapping[str, Any]:
        table = expect.packs["addon"]
        assert isinstance(table, AddOnExpect)
        return {"addon_word": table.word}

    def verify_rows(self, report: Mapping[str, Any], expect: Expectations, *,
                    prefix: str | None, gpu_expected: bool) -> Iterable[CheckRow]:
        found = str(report.get("addon"))
        return (CheckRow("addon.word", "hello", found, "pass" if found == "hello" else "fail"),)

    def doctor_rules(self) -> tuple[Any, ...]:
        return ()


@pytest.fixture
def addon() -> Registry[FrameworkPack]:
    """The built-in packs and the add-on, handed down: no global patched."""
    return Registry([*REGISTRY, AddOnPack()])


def _pspec(registry: Registry[FrameworkPack]) -> PlatformSpec:
    return parse_spec(SPEC_TEXT + '\n[addon]\nword = "hello"\n',
                      source="t.toml", registry=registry).for_platform("linux-64")


def _file(name: str, version: str) -> LockedPypiFile:
    return LockedPypiFile(name=name, version=version, filename=f"{name}-{version}.tar.gz",
                          url=f"https://files.example/{name}-{version}.tar.gz", kind="sdist",
                          sha256="0" * 64)


def test_a_mounted_pack_adds_its_stack_names_to_the_locked_versions(
        addon: Registry[FrameworkPack]) -> None:
    pypi = [_file("numpy", "1.19.5"), _file("addon-dist", "2.3.1"), _file("other", "1.0")]
    versions = stack_versions(_pspec(addon), addon, pypi=pypi, conda=(), deb=())
    assert versions == {"addon": "2.3.1", "numpy": "1.19.5", "python": "3.7"}
    plain = parse_spec(SPEC_TEXT, source="t.toml", registry=addon).for_platform("linux-64")
    assert "addon" not in stack_versions(plain, addon, pypi=pypi, conda=(), deb=())


def test_reports_merge_in_probe_order() -> None:
    first = {"format": REPORT_FORMAT, "versions": {"numpy": "1.19.5"}, "kernels": [{"name": "a"}],
             "theano": {"x": 1}, "distributions": {"six": "1.16.0"}}
    second = {"format": REPORT_FORMAT, "versions": {"numpy": "9", "addon": "2.3.1"},
              "import_errors": {"h5py": "boom"}, "kernels": [{"name": "b"}], "theano": "no",
              "addon": "hello"}
    merged = merge_reports([("theano", first), ("addon", second)])
    assert merged["versions"] == {"numpy": "1.19.5", "addon": "2.3.1"}
    assert merged["import_errors"] == {"h5py": "boom"}
    assert [k["name"] for k in merged["kernels"]] == ["a", "b"]
    assert merged["theano"] == {"x": 1} and merged["addon"] == "hello"
    broken = merge_reports([("theano", first), ("addon", {"error": "no keras"})])
    assert broken["error"] == "addon's probe: no keras"
    rows = check_report(broken, load_lock(LOCK, REGISTRY).platforms["linux-64"].expect, REGISTRY,
                        gpu_expected=False)
    assert [(r.name, r.status, r.why) for r in rows] == [
        ("probe", "fail", "addon's probe: no keras")]


@pytest.mark.posix_only("the stand-in probes are shell-free Python scripts run by sys.executable "
                        "through a POSIX prefix layout")
def test_verify_runs_each_packs_probe_kernels_in_the_first(addon: Registry[FrameworkPack],
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    seen = tmp_path / "requests.jsonl"
    script = ("import json, sys\nrequest = json.load(sys.stdin)\n"
              f"open({str(seen)!r}, 'a').write(json.dumps(request) + '\\n')\n"
              "print(json.dumps({'format': 1, 'NAME': 'hello', 'versions': {'NAME': '1'}}))\n")
    probes = {}
    for name in ("theano", "addon"):
        probes[name] = tmp_path / f"{name}_probe.py"
        probes[name].write_text(script.replace("NAME", name), encoding="utf-8")
    monkeypatch.setattr(addon.get("theano"), "probe", probes["theano"], raising=False)
    monkeypatch.setattr(addon.get("addon"), "probe", probes["addon"], raising=False)

    plock = load_lock(LOCK, addon).platforms["linux-64"]
    expect = plock.expect.model_copy(update={"packs": {**plock.expect.packs,
                                                       "addon": AddOnExpect(word="hello")}})
    assert [name for name, _ in probe_scripts(expect, addon)] == ["theano", "addon"]
    assert build_request(expect, addon, kernels=False)["kernels"] == []
    ctx = make_ctx(tmp_path, "linux-64", None)
    ctx = dataclasses.replace(ctx, lock=plock.model_copy(update={"expect": expect}),
                              registry=addon)
    python = Path(ctx.layout.python)
    python.parent.mkdir(parents=True, exist_ok=True)
    python.symlink_to(sys.executable)
    (ctx.prefix / "envforge-env.json").write_text("[]", encoding="utf-8")

    report = run_probes(ctx, addon)
    assert report["versions"] == {"theano": "1", "addon": "1"}
    requests = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [len(r["kernels"]) for r in requests] == [len(expect.kernels), 0]
    assert all(r["addon_word"] == "hello" for r in requests)
    rows = {r.name: r for r in check_report(report, expect, addon, gpu_expected=False)}
    assert rows["addon.word"].status == "pass"

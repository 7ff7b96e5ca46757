"""packs/base.ModulePack: a pack's hooks are found in its own package's modules (compat,
expect, verify), imported only when first called, and its kernels' device is its section's;
shown with a pack written outside envforge, as a third party would write one."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from envforge.spec import PlatformSpec, parse_spec
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[2]
SPEC_TEXT = (REPO / "specs" / "theano-cpu.toml").read_text(encoding="utf-8")

FILES = {
    "__init__.py": '''
        from envforge.packs.base import ModulePack, PackDefaults
        from envforge.spec import Frozen


        class MiniSection(Frozen):
            device: str = "cpu"
            float_x: str = "float64"


        class MiniPack(ModulePack, PackDefaults):
            name = "mini"
            section = MiniSection
            expect = MiniSection
            probe = None
            probe_modules = ()


        MINI = MiniPack()
        ''',
    "compat.py": '''
        def compat_checks(pspec, pins, report):
            report("mini.rule", "no %s" % sorted(pins), "mini's source", "pin it")
        ''',
    "expect.py": '''
        def expectations(pspec, versions):
            return ("expected", dict(versions))
        ''',
    "verify.py": '''
        def probe_request(expect):
            return {"mini": expect}


        def verify_rows(report, expect, *, prefix, gpu_expected):
            return [(report, expect, prefix, gpu_expected)]
        ''',
}


@pytest.fixture
def mini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    package = tmp_path / "minipack"
    package.mkdir()
    for name, text in FILES.items():
        (package / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "minipack" or m.startswith("minipack.")]:
        monkeypatch.delitem(sys.modules, name)
    import minipack  # type: ignore[import-not-found]

    return minipack


def _pspec(**packs: Any) -> PlatformSpec:
    spec = parse_spec(SPEC_TEXT, source="theano-cpu.toml", registry=REGISTRY)
    pspec = spec.for_platform("linux-64")
    return pspec.model_copy(update={"packs": packs})


def test_hooks_come_from_the_pack_s_own_modules_when_first_called(mini: Any) -> None:
    pack = mini.MINI
    assert "minipack.verify" not in sys.modules and "minipack.compat" not in sys.modules
    assert pack.expectations(_pspec(), {"mini": "1.0"}) == ("expected", {"mini": "1.0"})
    assert pack.probe_request("E") == {"mini": "E"}
    assert pack.verify_rows("R", "E", prefix="/env", gpu_expected=True) == [
        ("R", "E", "/env", True)]
    reported: list[tuple[str, ...]] = []
    pack.compat_checks(_pspec(), {"b": (), "a": ()}, lambda *row: reported.append(row))
    assert reported == [("mini.rule", "no ['a', 'b']", "mini's source", "pin it")]
    assert (pack.steps(None), pack.env_edits(None), pack.knowledge, pack.implicit) == \
        ((), (), (), False)


def test_the_kernels_run_on_the_section_s_device_or_its_default(mini: Any) -> None:
    pack = mini.MINI
    assert pack.kernel_device(_pspec()) == ("cpu", "float64")
    chosen = mini.MiniSection(device="cuda", float_x="float32")
    assert pack.kernel_device(_pspec(mini=chosen)) == ("cuda", "float32")

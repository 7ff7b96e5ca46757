"""Safe fixes: line edits that keep the rest of a file, described before made, undone exactly."""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Literal

import pytest

from envforge.app.doctorfixes import apply_fixes, plan_fixes, undo_fixes
from envforge.doctor import Finding, Fix, FixAction, fix_steps
from envforge.doctor.fixes import FixPlanner
from envforge.packapi import Registry
from envforge.packs.base import PackDefaults
from envforge.packs.theano.rcfile import ConfigEdit, rewrite
from envforge.steps.actions import StepPlan, WriteFile
from envforge.steps.base import Change, state_of
from tests.doctor.layouts import home, judge, look, venv
from tests.testing.packs import REGISTRY
from tests.testing.trees import snapshot

WINDOWS_BLOG_RC = (
    "; written by hand, after the blog\r\n"
    "[global]\r\n"
    "device = gpu\r\n"
    "floatX = float32\r\n"
    "\r\n"
    "[lib]\r\n"
    "cnmem = 0.8\r\n"
    "\r\n"
    "[cudnn]\r\n"
    "enable = True\r\n"
    "\r\n"
    "[nvcc]\r\n"
    "flags = -D_FORCE_INLINES\r\n"
    "    -arch=sm_52\r\n"
    "fastmath = True\r\n"
    "\r\n"
    "[dnn]\r\n"
    "enabled = true\r\n")


def _edit(op: str, section: str, key: str, **more: str) -> ConfigEdit:
    return ConfigEdit.model_validate({"path": "x", "op": op, "section": section, "key": key,
                                        **more})


def test_rewrite_keeps_every_other_byte() -> None:
    out = rewrite(WINDOWS_BLOG_RC, [
        _edit("set", "global", "device", value="cuda"),
        _edit("move", "lib", "cnmem", new_section="gpuarray", new_key="preallocate",
              note="moved"),
        _edit("comment-out", "nvcc", "flags", note="removed")])
    assert out == (
        "; written by hand, after the blog\r\n"
        "[global]\r\n"
        "device = cuda\r\n"
        "floatX = float32\r\n"
        "\r\n"
        "[lib]\r\n"
        "# envforge doctor: moved\r\n"
        "# cnmem = 0.8\r\n"
        "\r\n"
        "[cudnn]\r\n"
        "enable = True\r\n"
        "\r\n"
        "[nvcc]\r\n"
        "# envforge doctor: removed\r\n"
        "# flags = -D_FORCE_INLINES\r\n"
        "#     -arch=sm_52\r\n"
        "fastmath = True\r\n"
        "\r\n"
        "[dnn]\r\n"
        "enabled = true\r\n"
        "\r\n"
        "[gpuarray]\r\n"
        "preallocate = 0.8\r\n")


def test_move_onto_a_key_already_set_keeps_that_one() -> None:
    out = rewrite("[cudnn]\nenable = True\n\n[dnn]\nenabled = False\n",
                  [_edit("move", "cudnn", "enable", new_section="dnn", new_key="enabled",
                         note="moved")])
    assert out == "[cudnn]\n# envforge doctor: moved\n# enable = True\n\n[dnn]\nenabled = False\n"


def test_set_adds_to_an_existing_section_and_creates_files() -> None:
    assert rewrite("[dnn]\nconv.algo_fwd = small\n\n[global]\ndevice = cuda\n",
                   [_edit("set", "dnn", "enabled", value="False")]) == \
        "[dnn]\nconv.algo_fwd = small\nenabled = False\n\n[global]\ndevice = cuda\n"
    assert rewrite("", [_edit("set", "dnn", "enabled", value="False")]) == \
        "[dnn]\nenabled = False\n"


def _blog_host(tmp_path: Path) -> tuple[dict[str, str], Path]:
    profile = home(tmp_path)
    rc = profile / ".theanorc.txt"
    rc.write_bytes(WINDOWS_BLOG_RC.encode())
    rc.chmod(0o600)
    prefix = venv(tmp_path / "env", {"Theano-PyMC": "1.0.5", "numpy": "1.19.5"})
    return {"USERPROFILE": str(profile), "VIRTUAL_ENV": str(prefix)}, rc


@pytest.mark.posix_only("Unix file modes (Windows keeps only a read-only bit)")
def test_fix_then_undo_restores_the_theanorc_byte_for_byte(tmp_path: Path) -> None:
    env, rc = _blog_host(tmp_path)
    original = rc.read_bytes()
    state = tmp_path / "state"
    findings = judge(look(tmp_path, env, platform="win-64"))
    steps = fix_steps(findings, REGISTRY)

    plan = plan_fixes(steps, platform="win-64", where="this host")
    assert plan.pending and rc.read_bytes() == original  # describing changed nothing
    [change] = plan.steps[0].changes
    assert change.action == "replace" and change.target == str(rc)
    assert "\n-device = gpu\r\n+device = cuda\r\n" in change.detail

    assert apply_fixes(steps, state) == [f"doctor: {rc}"]
    fixed = rc.read_bytes()
    assert b"device = cuda\r\n" in fixed and b"[gpuarray]\r\npreallocate = 0.8\r\n" in fixed
    assert stat.S_IMODE(rc.stat().st_mode) == 0o600  # the mode is kept
    assert not [f for f in judge(look(tmp_path, env, platform="win-64"))
                if f.fix is not None and f.fix.safe]
    assert apply_fixes(fix_steps(findings, REGISTRY), state) == []  # nothing left to do

    undone = undo_fixes(state)

    assert undone == [f"restored {rc}"]
    assert rc.read_bytes() == original
    assert stat.S_IMODE(rc.stat().st_mode) == 0o600
    assert undo_fixes(state) == []  # a second undo has nothing to do


def test_fix_creates_a_theanorc_and_undo_removes_it(tmp_path: Path) -> None:
    """[dnn] enabled = False for cuDNN 9 goes to ~/.theanorc when no file exists yet."""
    from tests.doctor.layouts import cudnn_header, nvidia_smi

    include = tmp_path / "include"
    cudnn_header(include, "9.14.0")
    nvidia_smi(tmp_path / "bin")
    prefix = venv(tmp_path / "env", {"Theano-PyMC": "1.0.5", "pygpu": "0.7.6"})
    profile = home(tmp_path)
    env = {"HOME": str(profile), "VIRTUAL_ENV": str(prefix), "PATH": str(tmp_path / "bin")}
    before = snapshot(profile)
    state = tmp_path / "state"

    apply_fixes(fix_steps(judge(look(tmp_path, env, include_dirs=(include,))), REGISTRY), state)
    assert (profile / ".theanorc").read_text() == "[dnn]\nenabled = False\n"

    assert undo_fixes(state) == [f"removed {profile / '.theanorc'}"]
    assert snapshot(profile) == before


class _Note(FixAction):
    kind: Literal["toy-note"] = "toy-note"
    path: str
    text: str


class _NoteStep:
    name = "toy: notes"

    def __init__(self, notes: Sequence[FixAction]) -> None:
        self.notes = [note for note in notes if isinstance(note, _Note)]

    def plan(self) -> StepPlan:
        changes = tuple(Change(action="create", target=n.path, before=None, after=n.text)
                        for n in self.notes)
        actions = tuple(WriteFile(path=n.path, before=state_of(Path(n.path)),
                                  data=n.text.encode()) for n in self.notes)
        return StepPlan(step=self.name, changes=changes, actions=actions)


class _NotePack(PackDefaults):
    name = "toy"
    fix_kinds: ClassVar[Mapping[str, FixPlanner]] = {"toy-note": lambda notes: [_NoteStep(notes)]}


def test_a_pack_brings_its_own_kind_of_fix(tmp_path: Path) -> None:
    """Doctor's edit kinds are an open registry: a pack's kind is planned by the pack and
    run, journaled and undone by doctor as the core's are; a kind no pack plans is refused."""
    note = _Note(path=str(tmp_path / "note.txt"), text="hello\n")
    finding = Finding(id="toy.note", severity="warning", title="no note",
                      fix=Fix(text="write the note", actions=(note,)), source="this test")
    assert finding.model_dump(mode="json")["fix"]["actions"] == [
        {"kind": "toy-note", "path": note.path, "text": "hello\n"}]
    with pytest.raises(ValueError, match="no pack plans a fix of kind 'toy-note'"):
        fix_steps([finding], REGISTRY)
    state = tmp_path / "state"
    toy = Registry([*REGISTRY, _NotePack()])
    assert apply_fixes(fix_steps([finding], toy), state) == ["toy: notes"]
    assert (tmp_path / "note.txt").read_text() == "hello\n"
    undo_fixes(state)
    assert not (tmp_path / "note.txt").exists()

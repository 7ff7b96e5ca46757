"""Hostile inputs met during apply (issue 10 #9): a bundle wheel with ``../`` members and a
non-UTF-8 ``~/.theanorc`` are one-line errors or handled, never tracebacks."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

from envforge.errors import ArtifactError
from envforge.host.wheelinstall import WheelToInstall, install_wheels
from envforge.journal import rollback
from envforge.packs.theano.expect import TheanoExpect
from envforge.packs.theano.theanorc import TheanorcStep
from tests.testing.contexts import apply_step, make_ctx


def test_a_wheel_with_a_dotdot_member_is_refused_before_anything_installs(tmp_path: Path) -> None:
    wheel = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("evil/__init__.py", b"")
        zf.writestr("../../../outside.pth", b"import os\n")
        zf.writestr("evil-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: evil\n"
                    b"Version: 1.0\n")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with pytest.raises(ArtifactError, match=r"'\.\./\.\./\.\./outside\.pth': '\.\.' leads "
                       "outside"):
        install_wheels([WheelToInstall(wheel, sha)], Path(sys.executable))
    assert not (tmp_path / "outside.pth").exists()


def test_a_non_utf8_user_theanorc_is_planned_replaced_and_kept(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", None)
    ctx = dataclasses.replace(ctx, lock=ctx.lock.model_copy(update={"expect": ctx.lock.expect.
                              model_copy(update={"packs": {"theano": TheanoExpect(
                                  flags={}, theanorc="home")}})}))
    ctx.home.mkdir()
    original = b"[global]\ndevice = cpu  # caf\xe9 in latin-1\n"
    (ctx.home / ".theanorc").write_bytes(original)
    step = TheanorcStep()

    changes = step.describe(ctx)
    assert [c.action for c in changes] == ["replace"]
    assert "caf\\xe9" in changes[0].detail
    journal = apply_step(step, ctx)
    assert (ctx.home / ".theanorc").read_bytes() != original
    assert step.describe(ctx) == ()
    rollback(journal)
    assert (ctx.home / ".theanorc").read_bytes() == original

from __future__ import annotations

import subprocess

import pytest

from envforge.envvars import EnvEdit, apply_edits, render_activation

EDITS = (EnvEdit(name="PATH", op="prepend", value="/env/bin:/cuda/bin"),
         EnvEdit(name="THEANORC", op="set", value="/env/etc/theanorc"))


def test_prepend_moves_existing_entries_to_the_front_once() -> None:
    env = apply_edits(EDITS, {"PATH": "/usr/bin:/cuda/bin"}, pathsep=":")
    assert env["PATH"] == "/env/bin:/cuda/bin:/usr/bin"
    assert env["THEANORC"] == "/env/etc/theanorc"
    assert apply_edits(EDITS, env, pathsep=":") == env  # idempotent


@pytest.mark.posix_only("runs the activation script with sh")
def test_sh_activation_really_sets_the_variables() -> None:
    script = render_activation(EDITS, "sh") + 'printf "%s|%s" "$PATH" "$THEANORC"\n'
    out = subprocess.run(["sh", "-c", script], env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout
    assert out == "/env/bin:/cuda/bin:/usr/bin:/bin|/env/etc/theanorc"


def test_windows_scripts() -> None:
    bat = render_activation(EDITS, "bat")
    assert '@set "PATH=/env/bin:/cuda/bin;%PATH%"' in bat
    assert "$env:THEANORC = '/env/etc/theanorc'" in render_activation(EDITS, "ps1")

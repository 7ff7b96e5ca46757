from __future__ import annotations

import subprocess
from pathlib import Path

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


VENV_ACTIVATE = """\
deactivate () {
    if [ -n "${_OLD_VIRTUAL_PATH:-}" ] ; then
        PATH="${_OLD_VIRTUAL_PATH:-}"
        export PATH
        unset _OLD_VIRTUAL_PATH
    fi
    unset VIRTUAL_ENV
    if [ ! "${1:-}" = "nondestructive" ] ; then
        unset -f deactivate
    fi
}
deactivate nondestructive
VIRTUAL_ENV="/env"
export VIRTUAL_ENV
_OLD_VIRTUAL_PATH="$PATH"
PATH="$VIRTUAL_ENV/bin:$PATH"
export PATH
"""


def _bash(script: str, env: dict[str, str]) -> str:
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.posix_only("sources the activate and deactivate scripts in bash")
def test_venv_deactivate_restores_what_activation_changed(tmp_path: Path) -> None:
    """A real venv-style activate with envforge's block, sourced and deactivated in bash:
    THEANORC unset again, LD_LIBRARY_PATH and PATH as before; twice in one shell too."""
    from envforge.envvars import render_venv_block

    edits = (*EDITS, EnvEdit(name="LD_LIBRARY_PATH", op="prepend", value="/env/lib"))
    activate = tmp_path / "activate"
    activate.write_text(VENV_ACTIVATE + render_venv_block(edits))
    show = 'printf "%s|%s|%s|%s\\n" "${THEANORC-unset}" "$LD_LIBRARY_PATH" "$PATH" ' \
        '"$(type -t deactivate || echo none)"\n'
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/opt/lib"}
    out = _bash(f". {activate}\n{show}. {activate}\n{show}deactivate\n{show}", env)
    active, again, after = out.splitlines()
    assert active.startswith("/env/etc/theanorc|/env/lib:/opt/lib|/env/bin")
    assert again == active  # activating twice does not stack or lose the saved values
    assert after == "unset|/opt/lib|/usr/bin:/bin|none"
    with_rc = _bash(f". {activate}\ndeactivate\n{show}", {**env, "THEANORC": "/home/u/.rc"})
    assert with_rc.startswith("/home/u/.rc|/opt/lib|")


@pytest.mark.posix_only("sources the activate and deactivate scripts in bash")
def test_conda_deactivate_d_restores(tmp_path: Path) -> None:
    from envforge.envvars import render_sh_restore, render_sh_save

    (tmp_path / "on.sh").write_text(render_sh_save(EDITS) + render_activation(EDITS, "sh"))
    (tmp_path / "off.sh").write_text(render_sh_restore(EDITS))
    out = _bash(f". {tmp_path}/on.sh\n. {tmp_path}/off.sh\n"
                'printf "%s|%s" "${THEANORC-unset}" "$PATH"', {"PATH": "/usr/bin"})
    assert out == "unset|/usr/bin"

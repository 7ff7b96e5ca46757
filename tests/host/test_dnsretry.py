"""host.dnsretry: uv's lookups retry after 1 s unless the user or the host chose otherwise,
and glibc really takes the options from the environment envforge gives uv."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envforge.host import dnsretry
from envforge.host.uv import uv_binary, uv_environ

# what a child's glibc resolver settled on: res_init(), then _res.retrans and _res.retry
RES_STATE = """
import ctypes, json
libc = ctypes.CDLL(None)
init = getattr(libc, "__res_init")
state = libc.__res_state
state.restype = ctypes.POINTER(ctypes.c_int * 2)
assert init() == 0
timeout, attempts = state().contents
print(json.dumps([timeout, attempts]))
"""


def test_a_quick_retry_where_nothing_was_chosen() -> None:
    assert dnsretry.retry_options({}, "nameserver 10.0.0.53\n") == {
        "RES_OPTIONS": "timeout:1 attempts:5"}
    assert dnsretry.retry_options({}, None) == {"RES_OPTIONS": "timeout:1 attempts:5"}
    assert dnsretry.retry_options({}, "options ndots:2 rotate\n") == {
        "RES_OPTIONS": "timeout:1 attempts:5"}


@pytest.mark.parametrize("environ, conf", [
    ({"RES_OPTIONS": "timeout:3"}, "nameserver 10.0.0.53\n"),
    ({"RES_OPTIONS": ""}, None),  # set, even empty: the user's
    ({}, "nameserver 10.0.0.53\noptions timeout:2\n"),
    ({}, "options rotate timeout:7 attempts:2\n"),
    ({}, "options attempts:1\n"),  # RES_OPTIONS would reset it too
])
def test_the_user_or_the_host_choice_wins(environ: dict[str, str], conf: str | None) -> None:
    assert dnsretry.retry_options(environ, conf) == {}


def test_a_commented_timeout_is_no_choice() -> None:
    assert dnsretry.retry_options({}, "# options timeout:9\n") != {}
    assert dnsretry.retry_options({}, "options ndots:1\ntimeout:9 attempts:2\n") != {}


@pytest.mark.posix_only("glibc's stub resolver reads RES_OPTIONS; Windows has none")
def test_uv_is_a_glibc_build_so_it_reads_the_variable() -> None:
    """A musl (static) uv would ignore RES_OPTIONS: uv names the libc it was built for."""
    done = subprocess.run([uv_binary(), "--version"], check=True, capture_output=True,
                          text=True)
    assert "-linux-gnu)" in done.stdout


@pytest.mark.posix_only("glibc's stub resolver reads RES_OPTIONS; Windows has none")
def test_uv_environment_sets_glibcs_timeout_and_attempts(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RES_OPTIONS", raising=False)
    monkeypatch.setattr(dnsretry, "RESOLV_CONF", tmp_path / "resolv.conf")  # no host choice
    env = uv_environ({"PATH": "/usr/bin:/bin", "ENVFORGE_HOME": str(tmp_path)})
    done = subprocess.run([sys.executable, "-c", RES_STATE], env=env, check=True,
                          capture_output=True, text=True)
    assert json.loads(done.stdout) == [1, 5]
    plain = subprocess.run([sys.executable, "-c", RES_STATE], check=True, capture_output=True,
                           text=True, env={"PATH": "/usr/bin:/bin"})
    assert json.loads(plain.stdout) != [1, 5]  # the settings came from the environment


@pytest.mark.posix_only("glibc's stub resolver reads RES_OPTIONS; Windows has none")
def test_uv_environment_keeps_the_users_options(tmp_path: Path) -> None:
    env = uv_environ({"RES_OPTIONS": "timeout:3 attempts:1", "ENVFORGE_HOME": str(tmp_path)})
    assert env["RES_OPTIONS"] == "timeout:3 attempts:1"

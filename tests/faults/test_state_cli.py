"""State faults as a user meets them, through the real CLI: nothing is changed before every
file is fetched and checked (online too), a host that refuses a write gets one line, and a
damaged record or journal has a documented way out (``rollback --force``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envforge.cli import main
from tests.faults.conftest import World, count
from tests.faults.harness import USER_RC, envforge, snapshot

pytestmark = [pytest.mark.slow, pytest.mark.network]


def _nothing_changed(world: World, prefix: Path) -> None:
    assert not prefix.exists() and not prefix.parent.exists()
    assert not list(world.state.glob("*/journal.jsonl"))
    assert not list(world.state.glob("*/applied.json"))
    assert (world.home / ".theanorc").read_bytes() == USER_RC


def _one_line(err: str) -> str:
    """The one error line (progress lines may precede it); no traceback."""
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert "Traceback" not in err and len(errors) == 1, err
    return errors[0]


def _tamper(world: World, pattern: str, replacement: str) -> None:
    lock = world.project / "locks" / "a.lock"
    text = lock.read_text()
    changed = re.sub(pattern, replacement, text, count=1, flags=re.S)
    assert changed != text
    lock.write_text(changed)


def _empty_cache(world: World) -> None:
    (world.efhome / "cache").unlink()
    (world.efhome / "cache").mkdir()


@pytest.mark.parametrize("fault", ["deb hash", "wheel hash", "deb url", "no network"])
def test_online_apply_checks_every_file_before_the_first_change(
        fault: str, world: World, tmp_path: Path) -> None:
    prefix = tmp_path / "envs" / "p"
    argv = ["apply", str(world.spec("a")), "--yes", "--prefix", str(prefix)]
    if fault == "deb hash":
        _tamper(world, r'(\[\[platforms\.linux-64\.deb\]\].*?sha256 = ")[0-9a-f]', r"\g<1>0")
    elif fault == "wheel hash":
        _tamper(world, r'(\[\[platforms\.linux-64\.pypi\]\].*?sha256 = ")[0-9a-f]', r"\g<1>0")
    elif fault == "deb url":
        _empty_cache(world)
        _tamper(world, r'(\[\[platforms\.linux-64\.deb\]\].*?url = ")https://[^"]*',
                r"\g<1>http://127.0.0.1:9/moved.deb")
    else:
        _empty_cache(world)
    if fault == "no network":
        if subprocess.run(["unshare", "-rn", "true"], check=False).returncode != 0:
            pytest.skip("unshare -rn is not permitted here")
        done = subprocess.run(["unshare", "-rn", sys.executable, "-m", "envforge", *argv],
                              env=world.env, capture_output=True, text=True, check=False)
    else:
        done = envforge(*argv, env=world.env)
    assert done.returncode == (2 if "hash" in fault else 1), done.stderr
    assert "nothing was changed" in _one_line(done.stderr)
    _nothing_changed(world, prefix)
    count("online preflight: refused before the first change")


def _in_namespace(world: World, folder: Path, options: str,
                  *argv: str) -> subprocess.CompletedProcess[str]:
    """envforge with a fresh tmpfs (``options``) mounted over ``folder`` (a user namespace)."""
    if subprocess.run(["unshare", "-rm", "true"], check=False).returncode != 0:
        pytest.skip("unshare -rm is not permitted here")
    script = f'mount -t tmpfs -o {options} tmpfs "$0" && exec "$@"'
    return subprocess.run(["unshare", "-rm", "sh", "-c", script, str(folder), sys.executable,
                           "-m", "envforge", *argv], env=world.env, capture_output=True,
                          text=True, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("where", ["ENVFORGE_HOME", "HOME", "state full"])
def test_a_host_that_refuses_a_write_gets_one_line(where: str, world: World,
                                                   tmp_path: Path) -> None:
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    folder, options, code = {
        "ENVFORGE_HOME": (world.efhome, "ro", "EROFS"),
        "HOME": (world.home, "ro", "EROFS"),
        "state full": (world.state, "size=8k", "ENOSPC"),
    }[where]
    folder.mkdir(exist_ok=True)
    done = _in_namespace(world, folder, options, "apply", spec, "--yes", "--prefix", str(prefix))
    assert done.returncode == 1, done.stderr
    assert f"({code})" in _one_line(done.stderr)
    if where != "state full":  # seen before the first change
        assert str(folder) in done.stderr
        _nothing_changed(world, prefix)
    count("host refusals (EROFS, ENOSPC): one line, exit 1")
    shutil.rmtree(prefix.parent, ignore_errors=True)


def test_a_damaged_record_has_a_way_out(world: World, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    before = snapshot(world.home, prefix.parent)
    assert main(["apply", spec, "--yes", "--prefix", str(prefix), "-q"]) == 0
    (record,) = world.state.glob("*/applied.json")
    record.write_bytes(record.read_bytes()[:20])  # torn, as an unsynced write could leave it
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "damaged" in capsys.readouterr().out
    for argv in (["apply", spec, "--yes"], ["rollback", spec]):
        assert main([*argv, "--prefix", str(prefix)]) == 1
        err = _one_line(capsys.readouterr().err)
        assert str(record) in err and "--force" in err
    assert main(["rollback", spec, "--prefix", str(prefix), "--force", "-q"]) == 0
    assert snapshot(world.home, prefix.parent) == before
    count("state: damaged applied.json, status/apply/rollback, --force")


@pytest.mark.parametrize("damage", ["corrupt line", "missing backup"])
def test_a_damaged_journal_is_forced_through(damage: str, world: World, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "envs" / "p"
    spec = str(world.spec("a"))
    assert main(["apply", spec, "--yes", "--prefix", str(prefix), "-q"]) == 0
    (journal,) = world.state.glob("*/journal.jsonl")
    if damage == "corrupt line":
        lines = journal.read_bytes().split(b"\n")
        lines[3] = b"\x00garbage"
        journal.write_bytes(b"\n".join(lines))
    else:
        for backup in (journal.parent / "backups").iterdir():
            backup.unlink()
    capsys.readouterr()
    assert main(["rollback", spec, "--prefix", str(prefix)]) == 1
    assert "undo again with --force" in _one_line(capsys.readouterr().err)
    assert prefix.exists()  # refused before anything was undone

    assert main(["rollback", spec, "--prefix", str(prefix), "--force"]) == 0
    err = capsys.readouterr().err
    assert "warning: could not restore " in err
    assert not prefix.parent.exists()
    count("journal: corrupt line / missing backup, rollback --force")

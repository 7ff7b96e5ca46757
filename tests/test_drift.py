"""Drift: what was installed by hand, changed in place or replaced, against the lock."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envforge.drift import Drift, find_drift, stale_distributions
from envforge.lockfile import LockedPypiFile
from envforge.verify import drift_rows
from tests.testing.specs import venv_spec_text


def _dist(site: Path, name: str, version: str, files: dict[str, str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    rows = []
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_bytes(text.encode())  # as a wheel has them: no \r\n on Windows
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        rows.append(f"{path},sha256={digest.rstrip(b'=').decode()},{len(text)}")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def _locked(name: str, version: str) -> LockedPypiFile:
    return LockedPypiFile(name=name, version=version, kind="wheel", filename=f"{name}.whl",
                          url="https://x/y.whl", sha256="a" * 64)


def test_extra_other_version_modified_and_missing(tmp_path: Path) -> None:
    _dist(tmp_path, "six", "1.16.0", {"six.py": "ok\n"})
    _dist(tmp_path, "numpy", "1.21.6", {"numpy/__init__.py": "x\n"})
    _dist(tmp_path, "toml", "0.10.2", {"toml/__init__.py": "t\n"})
    _dist(tmp_path, "mkl_service", "2.4", {"mkl/__init__.py": "m\n"})
    lock = [_locked("six", "1.16.0"), _locked("numpy", "1.19.5"), _locked("scipy", "1.7.3")]
    assert find_drift(tmp_path, lock, also_expected=["mkl-service"]).summary() == (
        "1 not in the lock; 1 at another version; 1 missing")
    (tmp_path / "six.py").write_text("edited\n")
    drift = find_drift(tmp_path, lock, also_expected=["mkl-service"])
    assert drift.extra == ["toml 0.10.2"]
    assert drift.other_version == ["numpy: locked 1.19.5, found 1.21.6"]
    assert drift.modified == ["six: six.py"] and drift.missing == ["scipy"]
    (tmp_path / "six.py").unlink()
    assert find_drift(tmp_path, lock).modified == ["six: six.py"]


def test_a_conda_part_under_another_name_is_not_extra_but_a_hand_install_is(
        tmp_path: Path) -> None:
    """conda's ``pytorch`` installs ``torch-*.dist-info``: its installer marks it conda's;
    only where the lock has conda packages is that mark trusted."""
    _dist(tmp_path, "torch", "1.4.0", {"torch/__init__.py": "t\n"})
    (tmp_path / "torch-1.4.0.dist-info" / "INSTALLER").write_text("conda\n")
    _dist(tmp_path, "toml", "0.10.2", {"toml/__init__.py": "t\n"})
    (tmp_path / "toml-0.10.2.dist-info" / "INSTALLER").write_text("uv\n")
    assert find_drift(tmp_path, [], also_expected=["pytorch"]).extra == ["toml 0.10.2"]
    assert find_drift(tmp_path, []).extra == ["toml 0.10.2", "torch 1.4.0"]


def test_stale_ones_are_envforges_own_that_the_lock_no_longer_names(tmp_path: Path) -> None:
    """INSTALLER tells them apart: envforge's (an earlier lock's), a user's (uv, pip) and a
    conda part's; a locked one is never stale."""
    for name, installer in (("requests", "envforge"), ("six", "envforge"), ("toml", "uv"),
                            ("torch", "conda"), ("attrs", "")):
        _dist(tmp_path, name, "1.0", {})
        if installer:
            (tmp_path / f"{name}-1.0.dist-info" / "INSTALLER").write_text(installer + "\n")
    assert stale_distributions(tmp_path, [_locked("six", "1.0")],
                               also_expected=["pytorch"]) == ["requests"]


def test_a_file_written_twice_is_judged_by_its_last_writer(tmp_path: Path) -> None:
    """PerceptualSimilarity's lock: qtconsole 4.7.7's RECORD lists ``bin/jupyter-qtconsole``
    twice (the wheel's script, then its entry point's), and jupyter 1.0.0 and jupyter_core
    4.6.3 both ship ``jupyter.py``; neither file was changed after install."""
    site = tmp_path / "site-packages"
    _dist(site, "jupyter", "1.0.0", {"jupyter.py": "metapackage\n"})
    _dist(site, "jupyter_core", "4.6.3", {"jupyter.py": "core\n"})
    _dist(site, "qtconsole", "4.7.7", {"../bin/jupyter-qtconsole": "script\n"})
    record = site / "qtconsole-4.7.7.dist-info" / "RECORD"
    launcher = base64.urlsafe_b64encode(hashlib.sha256(b"launcher\n").digest()).rstrip(b"=")
    record.write_text(f"{record.read_text()}../bin/jupyter-qtconsole,sha256={launcher.decode()},9\n")
    (site / ".." / "bin" / "jupyter-qtconsole").write_bytes(b"launcher\n")  # no CRLF on Windows
    lock = [_locked("jupyter", "1.0.0"), _locked("jupyter-core", "4.6.3"),
            _locked("qtconsole", "4.7.7")]
    assert find_drift(site, lock).clean
    (site / "jupyter.py").write_bytes(b"edited\n")
    assert find_drift(site, lock).modified == ["jupyter: jupyter.py", "jupyter_core: jupyter.py"]


def test_versions_compare_as_versions(tmp_path: Path) -> None:
    _dist(tmp_path, "lasagne", "0.2.dev1", {"lasagne/__init__.py": "l\n"})
    assert find_drift(tmp_path, [_locked("Lasagne", "0.2.dev01")]).clean


def test_each_kind_of_drift_fails_its_verify_row_with_the_fix() -> None:
    clean = drift_rows(Drift(), sync="envforge apply s.toml --sync")
    assert [(r.name, r.status) for r in clean] == [
        ("drift.versions", "pass"), ("drift.files", "pass"), ("drift.extra", "pass")]
    drift = Drift(extra=[f"x{i} 1" for i in range(7)], other_version=["numpy: locked 1, found 2"],
                  modified=["six: six.py"], missing=["scipy"])
    rows = {r.name: r for r in drift_rows(drift, sync="envforge apply s.toml --sync")}
    assert all(r.status == "fail" and "`envforge apply s.toml --sync`" in r.why
               for r in rows.values())
    assert rows["drift.versions"].found == "numpy: locked 1, found 2; scipy: missing"
    assert rows["drift.files"].found == "six: six.py"
    assert rows["drift.extra"].found == "x0 1; x1 1; x2 1; x3 1; x4 1; and 2 more"


SPEC = venv_spec_text("drifty", 'packages = ["six==1.16.0"]\n')


class _Applied:
    """SPEC locked and applied at ``prefix`` under an ENVFORGE_HOME of the test's own."""

    def __init__(self, tmp_path: Path) -> None:
        (tmp_path / "specs").mkdir()
        self.spec = tmp_path / "specs" / "drifty.toml"
        self.spec.write_text(SPEC)
        self.env = {**os.environ, "ENVFORGE_HOME": str(tmp_path / "home")}
        self.prefix = tmp_path / "env"
        self("lock", str(self.spec), "-q")
        self("apply", str(self.spec), "--yes", "--prefix", str(self.prefix), "-q")

    def __call__(self, *args: str) -> str:
        return subprocess.run([sys.executable, "-m", "envforge", *args], env=self.env,
                              check=True, capture_output=True, text=True, timeout=600).stdout


@pytest.mark.network
@pytest.mark.slow
def test_status_lists_drift_and_apply_sync_restores_the_lock(tmp_path: Path) -> None:
    envforge = _Applied(tmp_path)
    spec, env, prefix = envforge.spec, envforge.env, envforge.prefix
    [clean] = json.loads(envforge("status", "--json"))["environments"]
    assert clean["drift"]["summary"] == "as locked"
    from envforge.host.uv import uv_binary

    subprocess.run([uv_binary(), "pip", "install", "-q", "--python", str(prefix / "bin" / "python"),
                    "toml==0.10.2"], check=True, env={**env, "UV_NO_CONFIG": "1"})
    [six] = prefix.glob("lib/python3.7/site-packages/six.py")
    six.write_text(six.read_text() + "# edited by hand\n")
    [drifted] = json.loads(envforge("status", "--json"))["environments"]
    assert drifted["drift"]["extra"] == ["toml 0.10.2"]
    assert drifted["drift"]["modified"] == ["six: six.py"]
    assert subprocess.run([sys.executable, "-m", "envforge", "plan", str(spec), "--sync",
                           "--prefix", str(prefix)], env=env, timeout=600).returncode == 3
    envforge("apply", str(spec), "--sync", "--yes", "--prefix", str(prefix), "-q")
    [synced] = json.loads(envforge("status", "--json"))["environments"]
    assert synced["drift"]["summary"] == "as locked"
    assert "# edited by hand" not in six.read_text()
    assert not list(prefix.glob("lib/python3.7/site-packages/toml-*.dist-info"))


@pytest.mark.network
@pytest.mark.slow
def test_apply_of_a_new_lock_removes_what_the_last_one_installed_and_it_no_longer_names(
        tmp_path: Path) -> None:
    """A re-lock: misads/easy_detection's new lock moved torch to 1.8.1 and no
    longer named requests and four others; apply left them and verify failed drift.extra,
    "installed behind envforge's back". apply now removes what envforge installed (its
    INSTALLER) and the lock dropped, shown in the plan; a user's install stays, for --sync."""
    from envforge.host.uv import uv_binary

    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "drifty.toml"
    spec.write_text(venv_spec_text("drifty", 'packages = ["six==1.16.0", "toml==0.10.2"]\n'))
    envforge = _Applied.__new__(_Applied)
    envforge.spec, envforge.prefix = spec, tmp_path / "env"
    envforge.env = {**os.environ, "ENVFORGE_HOME": str(tmp_path / "home")}
    envforge("lock", str(spec), "-q")
    envforge("apply", str(spec), "--yes", "--prefix", str(envforge.prefix), "-q")
    subprocess.run([uv_binary(), "pip", "install", "-q", "--python",
                    str(envforge.prefix / "bin" / "python"), "colorama==0.4.6"], check=True,
                   env={**envforge.env, "UV_NO_CONFIG": "1"})
    spec.write_text(venv_spec_text("drifty", 'packages = ["six==1.16.0"]\n'))
    envforge("lock", str(spec), "-q")
    planned = subprocess.run([sys.executable, "-m", "envforge", "plan", str(spec), "--prefix",
                              str(envforge.prefix), "--json"], env=envforge.env,
                             capture_output=True, text=True, timeout=600)
    assert planned.returncode == 3, planned.stderr  # changes to make
    plan = json.loads(planned.stdout)
    removals = [c for step in plan["plan"]["steps"] for c in step["changes"]
                if c["action"] == "remove"]
    assert [(c["target"].rsplit("/", 1)[-1], c["detail"]) for c in removals] == [
        ("toml", "an earlier lock's, not in this one")]
    envforge("apply", str(spec), "--yes", "--prefix", str(envforge.prefix), "-q")
    [applied] = json.loads(envforge("status", "--json"))["environments"]
    assert applied["drift"]["extra"] == ["colorama 0.4.6"]  # the user's, left to --sync
    site = envforge.prefix / "lib" / "python3.7" / "site-packages"
    assert not list(site.glob("toml*")) and list(site.glob("six-1.16.0.dist-info"))


@pytest.mark.network
@pytest.mark.slow
def test_sync_removing_a_distribution_leaves_the_files_a_locked_one_shares(
        tmp_path: Path) -> None:
    """tensorflow_gpu 1.13.1 left in an environment whose lock now names tensorflow 1.13.1
    (both hold tensorflow/): `apply --sync` removed tensorflow_gpu by its RECORD, deleting
    tensorflow's 5,725 files with it, and stopped with the environment unfinished. Here a
    distribution the lock does not name installs six.py too."""
    from envforge.host.uv import uv_binary
    from tests.host.test_wheelinstall import make_wheel

    envforge = _Applied(tmp_path)
    spec, env, prefix = envforge.spec, envforge.env, envforge.prefix
    [six] = prefix.glob("lib/python3.7/site-packages/six.py")
    (tmp_path / "w").mkdir()
    twin = make_wheel(tmp_path / "w", "sixtwin", "1.0", {"six.py": six.read_text()})
    subprocess.run([uv_binary(), "pip", "install", "-q", "--no-deps", "--python",
                    str(prefix / "bin" / "python"), str(twin)], check=True,
                   env={**env, "UV_NO_CONFIG": "1"})
    envforge("apply", str(spec), "--sync", "--yes", "--prefix", str(prefix), "-q")
    [synced] = json.loads(envforge("status", "--json"))["environments"]
    assert synced["drift"]["summary"] == "as locked"
    assert six.is_file()
    assert not list(prefix.glob("lib/python3.7/site-packages/sixtwin-*.dist-info"))

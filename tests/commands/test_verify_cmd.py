"""envforge verify on a really applied environment: every row, a tampered reference, reports."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge.cli import main
from tests.testing.homes import home_sharing_modules

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory,
            shared_cache: Path) -> Iterator[tuple[Path, Path]]:
    """theano-cpu applied once, in a project copy whose lock the tests may alter, with a
    cache of its own, not the run's shared one: the drift test edits an installed file in
    place, which (as root, past the read-only mode) writes through the hard link into the
    cache entry that other tests' environments link too. Theano's compiled modules are the
    run's (copied into the environment, never linked): g++ builds them once per run."""
    root = tmp_path_factory.mktemp("verify")
    project = root / "project"
    shutil.copytree(REPO / "specs", project / "specs")
    shutil.copytree(REPO / "locks", project / "locks")
    prefix = root / "env"
    saved = {k: os.environ.get(k) for k in ("ENVFORGE_HOME", "PYENV_ROOT")}
    os.environ["PYENV_ROOT"] = saved["PYENV_ROOT"] or str(Path.home() / ".pyenv")
    os.environ["ENVFORGE_HOME"] = str(home_sharing_modules(root / "envforge-home", shared_cache))
    spec = project / "specs" / "theano-cpu.toml"
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix), "-q"]) == 0
    yield spec, prefix
    main(["rollback", str(spec), "--prefix", str(prefix), "-q"])
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def test_verify_passes_with_every_row_and_valid_reports(
        applied: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, prefix = applied
    junit, report = tmp_path / "verify.xml", tmp_path / "verify.md"
    capsys.readouterr()
    code = main(["verify", str(spec), "--prefix", str(prefix), "--json", "--junit", str(junit),
                 "--report", str(report)])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, [r for r in document["rows"] if r["status"] == "fail"]
    names = {row["name"] for row in document["rows"]}
    for kernel in ("elementwise", "gemm", "conv", "scan", "grad", "random", "softmax_xent",
                   "train"):
        assert {f"kernel.{kernel}.checksum", f"kernel.{kernel}.samples"} <= names
    assert "kernel.scan.implementation" in names  # passed: Theano's C scan ran
    assert {"version.theano", "version.numpy", "device", "blas", "flag.blas.ldflags"} <= names
    skipped = [row for row in document["rows"] if row["status"] == "skip"]
    assert skipped and all(row["why"] for row in skipped)
    suite = ET.parse(junit).getroot()
    assert int(suite.get("tests", "0")) == len(document["rows"])
    assert int(suite.get("failures", "0")) == 0
    assert "kernel.conv.checksum" in report.read_text()


def test_a_changed_reference_fails_naming_its_kernel(
        applied: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    spec, prefix = applied
    lock = spec.parent.parent / "locks" / "theano-cpu.lock"
    original = lock.read_text()
    checksum = original.split('name = "gemm"', 1)[0].rsplit("checksum = ", 1)[1].split("\n")[0]
    assert float(checksum) > 0
    try:
        lock.write_text(original.replace(f"checksum = {checksum}\n",
                                         f"checksum = {float(checksum) * 1.001!r}\n", 1))
        capsys.readouterr()
        assert main(["verify", str(spec), "--prefix", str(prefix), "--json"]) == 1
        rows = json.loads(capsys.readouterr().out)["rows"]
        failed = [row["name"] for row in rows if row["status"] == "fail"]
        assert failed == ["kernel.gemm.checksum"]
        assert main(["verify", str(spec), "--prefix", str(prefix)]) == 1
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"next: look at the kernel.gemm.checksum row above, then `envforge doctor {spec}` "
            "for what on this host explains it")
    finally:
        lock.write_text(original)


SCAN_PROGRAM = """
import numpy as np, theano, theano.tensor as T
x = T.vector("x")
sums, _ = theano.scan(lambda v, acc: acc + v, sequences=x,
                      outputs_info=T.constant(0.0, dtype=x.dtype))
print(list(theano.function([x], sums)(np.arange(5, dtype=x.dtype))))
"""


def test_run_executes_a_scan_program(applied: tuple[Path, Path],
                                     capfd: pytest.CaptureFixture[str]) -> None:
    spec, prefix = applied
    capfd.readouterr()
    assert main(["run", str(spec), "--prefix", str(prefix), "--", "python", "-c",
                 SCAN_PROGRAM]) == 0
    assert "[0.0, 1.0, 3.0, 6.0, 10.0]" in capfd.readouterr().out


def test_without_setuptools_verify_fails_naming_scan_and_apply_fixes_it(
        applied: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The planted break of issue 9: Theano imports pkg_resources without declaring it."""
    spec, prefix = applied
    site = next(prefix.glob("lib/python3.*/site-packages"))
    removed = [site / "pkg_resources", site / "setuptools", *site.glob("setuptools-*.dist-info")]
    assert all(p.exists() for p in removed)
    for path in removed:
        shutil.rmtree(path)
    capsys.readouterr()
    assert main(["verify", str(spec), "--prefix", str(prefix), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)["rows"]
    failed = {row["name"]: row["why"] for row in rows if row["status"] == "fail"}
    assert set(failed) == {"kernel.scan.checksum", "kernel.scan.samples",
                           "kernel.scan.implementation", "drift.versions"}
    assert "setuptools: missing" in next(r["found"] for r in rows if r["name"] == "drift.versions")
    why = failed["kernel.scan.implementation"]
    assert "No module named 'pkg_resources'" in why
    assert "theano/gpuarray/linalg.py:3" in why and "envforge apply" in why
    # The fix the hint names: apply installs the locked setuptools again.
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix), "-q"]) == 0
    assert (site / "pkg_resources").is_dir()
    capsys.readouterr()
    assert main(["verify", str(spec), "--prefix", str(prefix), "-q"]) == 0


def test_drift_fails_verify_naming_each_kind_and_sync_restores_a_pass(
        applied: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pass means the locked stack is what runs: a hand-installed distribution, an edited
    locked file and a locked distribution at another version each fail their drift row,
    with `apply --sync` as the fix, which brings verify back to a pass."""
    from envforge.host.wheelinstall import WheelToInstall, install_wheels
    from tests.host.test_wheelinstall import make_wheel

    spec, prefix = applied
    python = prefix / "bin" / "python"
    site = next(prefix.glob("lib/python3.*/site-packages"))
    extra = make_wheel(tmp_path, "handmade", "0.1", {"handmade.py": "X = 1\n"})
    install_wheels([WheelToInstall(extra, sha256(extra))], python)
    [six] = site.glob("six-1.16.0.dist-info")
    six.rename(site / "six-1.15.0.dist-info")  # as a downgrade leaves it, files and all
    scipy_init = site / "scipy" / "__init__.py"
    scipy_init.write_text(scipy_init.read_text() + "# edited by hand\n")
    capsys.readouterr()
    assert main(["verify", str(spec), "--prefix", str(prefix), "--json"]) == 1
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    failed = {name for name, r in rows.items() if r["status"] == "fail"}
    assert {"drift.versions", "drift.files", "drift.extra"} <= failed
    assert failed <= {"drift.versions", "drift.files", "drift.extra", "version.six"}
    assert "six: locked 1.16.0, found 1.15.0" in rows["drift.versions"]["found"]
    assert rows["drift.files"]["found"] == "scipy: scipy/__init__.py"
    assert rows["drift.extra"]["found"] == "handmade 0.1"
    assert all(f"envforge apply {spec} --sync --prefix {prefix}" in rows[n]["why"]
               for n in ("drift.versions", "drift.files", "drift.extra"))
    assert main(["apply", str(spec), "--sync", "--yes", "--prefix", str(prefix), "-q"]) == 0
    assert not (site / "handmade.py").exists() and "# edited" not in scipy_init.read_text()
    capsys.readouterr()
    assert main(["verify", str(spec), "--prefix", str(prefix), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert all(rows[n]["status"] == "pass" for n in ("drift.versions", "drift.files",
                                                     "drift.extra"))


def sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()

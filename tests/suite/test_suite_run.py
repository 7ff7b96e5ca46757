"""verify --suite on a really applied theano-cpu: Theano-PyMC 1.0.5's own tests, from the
locked sdist, run by the locked pytest in a folder apart from the environment."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge.app.context import prepare
from envforge.cli import main
from envforge.envlayout import COMPILEDIR_IN_ENV
from envforge.envvars import apply_edits
from envforge.packs.theano.compilecache import STORE, environment_key, read_set, suite_key
from envforge.packs.theano.knowledge import SuiteSubsetRow, known_bad_tests, suite_subset
from envforge.packs.theano.suite import THEANO_SUITE
from envforge.steps.activation import load_edits
from envforge.suite import runner as testsuite
from envforge.suite.results import judge, parse_junit
from envforge.ui import UI
from tests.testing.homes import home_sharing

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory,
            shared_cache: Path) -> Iterator[tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("suite")
    project = root / "project"
    shutil.copytree(REPO / "specs", project / "specs")
    shutil.copytree(REPO / "locks", project / "locks")
    prefix = root / "env"
    saved = {k: os.environ.get(k) for k in ("ENVFORGE_HOME", "PYENV_ROOT")}
    os.environ["PYENV_ROOT"] = saved["PYENV_ROOT"] or str(Path.home() / ".pyenv")
    os.environ["ENVFORGE_HOME"] = str(home_sharing(root / "envforge-home", shared_cache))
    spec = project / "specs" / "theano-cpu.toml"
    assert main(["apply", str(spec), "--yes", "--prefix", str(prefix), "-q"]) == 0
    yield spec, prefix
    main(["rollback", str(spec), "--prefix", str(prefix), "-q"])
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _site_packages(prefix: Path) -> Path:
    return next(prefix.glob("lib/python3.*/site-packages"))


def test_the_cpu_subset_passes_within_its_bound_and_leaves_the_environment_alone(
        applied: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, prefix = applied
    # Python itself writes __pycache__ where it imports (unless PYTHONDONTWRITEBYTECODE)
    before = sorted(p.name for p in _site_packages(prefix).iterdir() if p.name != "__pycache__")
    junit, report = tmp_path / "verify.xml", tmp_path / "verify.md"
    capsys.readouterr()
    code = main(["verify", str(spec), "--prefix", str(prefix), "--suite", "--json",
                 "--junit", str(junit), "--report", str(report)])
    document = json.loads(capsys.readouterr().out)
    suite = document["suite"]
    assert code == 0, (suite["problem"], suite["failures"][:5])
    subset = suite_subset("1.0.5", "cpu")
    assert subset is not None
    assert suite["passed"] >= 50 and suite["failed"] == 0
    assert suite["seconds"] <= subset.time_limit_s
    names = [row["name"] for row in document["rows"]]
    assert "suite.cpu" in names and "kernel.gemm.checksum" in names
    cases = {case.get("name") for case in ET.parse(junit).getroot().iter("testcase")}
    assert "suite.cpu" in cases
    assert "suite.cpu" in report.read_text()
    # pytest went to a folder of its own, not into the user's environment
    after = sorted(p.name for p in _site_packages(prefix).iterdir() if p.name != "__pycache__")
    assert after == before and not any(name.startswith(("pytest", "_pytest")) for name in after)
    # what the workers compiled went to the store's suite set; their folders are gone
    ctx = prepare(spec, prefix=prefix, artifacts={}, bundle=None, offline=True, ui=UI(quiet=True))
    store = ctx.dirs.cache / STORE
    key = environment_key(ctx)
    assert key is not None
    found = read_set(store, suite_key(key))
    assert found is not None and len(found.folders) > 100
    place = hashlib.sha256(str(ctx.prefix).encode()).hexdigest()[:16]
    assert not (ctx.dirs.cache / "suite" / "runs" / place / "compiledir").exists()


def test_a_planted_break_fails_the_suite_naming_the_tests(applied: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    """Without pkg_resources (setuptools), Theano's scan cannot be imported: the suite's
    scan tests fail, and no known-bad row excuses them."""
    spec, prefix = applied
    ctx = prepare(spec, prefix=prefix, artifacts={}, bundle=None, offline=True, ui=UI(quiet=True))
    assert ctx.lock.suite is not None
    folder = testsuite.prepare_folder(ctx.lock.suite, ctx.lock.pypi, python=Path(ctx.layout.python),
                                      cache=ctx.dirs.cache)
    scan = "theano/scan_module/tests/test_scan.py::TestScan::test_one_sequence_one_output_weights"
    subset = SuiteSubsetRow(theano="==1.0.5", name="scan", device="cpu", time_limit_s=300,
                            tests=(scan,), source="this test")
    # as verify --suite does: the run starts from a copy of what the environment's verify
    # compiled (the first test's: scan_perform, the linker's modules), g++ builds the rest
    env = testsuite.suite_environ(apply_edits(load_edits(prefix), ctx.environ, pathsep=os.pathsep),
                                  folder, package="theano", compiledir=tmp_path / "compiledir",
                                  compiledir_flag=THEANO_SUITE.compiledir_flag,
                                  compiledir_seed=prefix / COMPILEDIR_IN_ENV)
    junit = tmp_path / "junit.xml"

    def run() -> tuple[tuple[str, str], ...]:
        done = testsuite.run_pytest(Path(ctx.layout.python),
                                    testsuite.pytest_args(folder, subset, junit=junit, workers=1),
                                    env=env, cwd=tmp_path / "run", junit=junit, timeout=300)
        assert done.junit is not None, done.output_tail
        verdict = judge(parse_junit(done.junit), known_bad_tests("1.0.5", "cpu"), subset="scan")
        return tuple((r.nodeid, r.message) for r in verdict.unknown)

    assert run() == ()
    site = _site_packages(prefix)
    (site / "pkg_resources").rename(site / "pkg_resources.off")
    try:
        failed = run()
    finally:
        (site / "pkg_resources.off").rename(site / "pkg_resources")
    assert [nodeid for nodeid, _ in failed] == [scan]
    assert "pkg_resources" in failed[0][1]

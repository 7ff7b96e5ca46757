"""The suite's judge: pytest's own JUnit XML read back into node ids, and the verdict logic."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envforge.packs.theano.knowledge import KnownBadTestRow
from envforge.suite.results import (
    CaseResult,
    SuiteReportError,
    judge,
    parse_junit,
    read_run,
    suite_rows,
    verdict_document,
)
from envforge.verify import verdict

_TESTS = '''
import pytest

def test_ok():
    pass

def test_fails():
    assert 1 == 2, "one is not two"

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_errors(broken):
    pass

class TestKind:
    @pytest.mark.parametrize("n", [1, 2])
    def test_param(self, n):
        assert n == 1

    def test_skipped(self):
        pytest.skip("not here")
'''


@pytest.fixture(scope="module")
def junit(tmp_path_factory: pytest.TempPathFactory) -> str:
    """JUnit XML from a real pytest run, with the options the suite passes."""
    root = tmp_path_factory.mktemp("junit")
    package = root / "pkg" / "tests"
    package.mkdir(parents=True)
    for folder in (root / "pkg", package):
        (folder / "__init__.py").write_text("")
    (package / "test_things.py").write_text(_TESTS)
    (package / "test_broken.py").write_text("import no_such_module_here\n")
    xml = root / "out.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--rootdir", str(root), "-o", "junit_family=xunit1",
                           "--continue-on-collection-errors", "--junitxml", str(xml),
                           str(root / "pkg")], cwd=root, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    return xml.read_text()


def test_junit_gives_pytests_node_ids_and_outcomes(junit: str) -> None:
    results = {r.nodeid: r for r in parse_junit(junit)}
    base = "pkg/tests/test_things.py"
    assert {nodeid: r.outcome for nodeid, r in results.items()} == {
        "pkg/tests/test_broken.py": "error",
        f"{base}::test_ok": "passed",
        f"{base}::test_fails": "failed",
        f"{base}::test_errors": "error",
        f"{base}::TestKind::test_param[1]": "passed",
        f"{base}::TestKind::test_param[2]": "failed",
        f"{base}::TestKind::test_skipped": "skipped",
    }
    assert "one is not two" in results[f"{base}::test_fails"].message
    assert "fixture broke" in results[f"{base}::test_errors"].message
    assert "no_such_module_here" in results["pkg/tests/test_broken.py"].message
    assert results[f"{base}::TestKind::test_skipped"].message.endswith("not here")


def test_unreadable_junit_is_an_error_not_a_pass() -> None:
    with pytest.raises(SuiteReportError):
        parse_junit("<testsuites><testsuite>")


def _row(test: str, tests: tuple[str, ...] = (),
         versions: dict[str, str] | None = None) -> KnownBadTestRow:
    return KnownBadTestRow(theano="==1.0.5", test=test, tests=tests, devices=("cuda",),
                           versions=versions or {}, reason="known reason", source="[TP] x.py:1")


def test_a_known_bad_row_matches_its_class_and_params_but_not_a_longer_name() -> None:
    row = _row("m.py::TestAlloc")
    assert row.matches("m.py::TestAlloc")
    assert row.matches("m.py::TestAlloc::test_x")
    assert row.matches("m.py::TestAlloc::test_x[float32]")
    assert not row.matches("m.py::TestAllocDiag::test_x")
    assert not row.matches("other.py::TestAlloc::test_x")


def test_a_narrow_row_matches_only_the_tests_it_names() -> None:
    row = _row("m.py::TestGer", ("test_outer", "test_f32_1_1"))
    assert row.matches("m.py::TestGer::test_outer")
    assert row.matches("m.py::TestGer::test_f32_1_1[float32]")
    assert not row.matches("m.py::TestGer::test_b_0_triggers_ger")
    assert not row.matches("m.py::TestGer::test_outer_more")
    assert not row.matches("m.py::TestGer")
    with pytest.raises(ValueError):
        _row("m.py::TestGer", ("TestGer::test_outer",))


def test_a_row_conditioned_on_a_version_holds_only_where_the_lock_meets_it() -> None:
    row = _row("m.py::TestMathErrorFunctions", ("test_elemwise_erfinv",), {"scipy": ">=1.4"})
    assert row.holds_for({"scipy": "1.6.0"}) and row.holds_for({"scipy": "1.4.0"})
    assert not row.holds_for({"scipy": "1.3.3"})
    assert not row.holds_for({})  # a version the lock does not hold never meets it
    assert _row("m.py::TestAlloc").holds_for({})
    with pytest.raises(ValueError):
        _row("m.py::TestAlloc", versions={"scipy": "not a range"})


def test_known_bad_failures_pass_verify_and_unknown_ones_fail_it(junit: str) -> None:
    results = parse_junit(junit)
    base = "pkg/tests/test_things.py"
    known = [_row(f"{base}::TestKind"), _row(f"{base}::test_errors"),
             _row("pkg/tests/test_broken.py"), _row(f"{base}::test_ok")]
    found = judge(results, known, subset="cpu")
    assert [r.nodeid for r in found.unknown] == [f"{base}::test_fails"]
    assert (found.passed, found.failed, found.known_bad_count, found.skipped) == (2, 1, 3, 1)
    assert found.known_bad_passed == (f"{base}::test_ok", f"{base}::TestKind::test_param[1]")
    rows = suite_rows(found)
    assert verdict(rows) == 1
    assert rows[0].name == "suite.cpu" and f"{base}::test_fails" in rows[0].why
    failing = [r for r in rows if r.name.startswith("suite.test.")]
    assert [(r.name, r.status) for r in failing] == [(f"suite.test.{base}::test_fails", "fail")]
    assert "one is not two" in failing[0].why
    skipped = [r for r in rows if r.status == "skip"]
    assert len(skipped) == 3 and all("[TP] x.py:1" in r.why for r in skipped)

    known.append(_row(f"{base}::test_fails"))
    cleared = judge(results, known, subset="cpu")
    assert cleared.ok and verdict(suite_rows(cleared)) == 0
    assert cleared.summary() == "2 passed, 0 failed, 4 known-bad, 1 skipped"
    document = verdict_document(found)
    assert document["failures"][0]["test"] == f"{base}::test_fails"
    assert document["known_bad"] == 3


def test_a_run_that_went_wrong_fails_even_with_no_failed_test() -> None:
    passed = [CaseResult("a.py::test_a", "passed")]
    stopped = judge(passed, [], subset="cpu", problem="the run passed its bound of 180s")
    assert not stopped.ok and verdict(suite_rows(stopped)) == 1
    empty = judge([], [], subset="cpu")
    assert not empty.ok and "no tests" in suite_rows(empty)[0].why


def test_a_class_imported_into_another_module_is_named_by_the_module_that_runs_it() -> None:
    """Theano's gpuarray modules import CPU test classes: JUnit's file attribute then names
    the defining module, the classname the collecting one, which is the node id's."""
    xml = ('<testsuites><testsuite><testcase classname="theano.gpuarray.tests.test_basic_ops.'
           'TestAlloc" name="test_alloc[x]" file="theano/tensor/tests/test_basic.py" line="9" '
           'time="0.5"><failure message="assert False">trace</failure></testcase>'
           '</testsuite></testsuites>')
    (result,) = parse_junit(xml)
    assert result.nodeid == "theano/gpuarray/tests/test_basic_ops.py::TestAlloc::test_alloc[x]"
    assert (result.outcome, result.message, result.seconds) == ("failed", "assert False", 0.5)


def test_how_the_run_ended_is_judged_as_well_as_its_tests(junit: str) -> None:
    results, problem = read_run(junit, 1, "", bound_s=180, subset="cpu")
    assert len(results) == 7 and problem == ""
    stopped, problem = read_run(junit, None, "", bound_s=180, subset="cpu")
    assert len(stopped) == 7 and "bound of 180s" in problem  # what ran still counts
    _, problem = read_run(None, 4, "ERROR: file or directory not found: x", bound_s=1,
                          subset="cpu")
    assert problem.startswith("pytest exited 4") and "not found: x" in problem
    _, problem = read_run(None, 0, "", bound_s=1, subset="cpu")
    assert "no JUnit XML" in problem
    _, problem = read_run("<testsuites>", 1, "", bound_s=1, subset="cpu")
    assert "does not parse" in problem

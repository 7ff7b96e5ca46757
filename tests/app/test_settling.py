"""init's drafting: a resolver's failure shown as its reason (never its command line), the
day widened by calendar months, and the time bound that ends the resolver it started."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import pytest

from envforge.app.settling import (
    DraftTimeoutError,
    _blames_url,
    _bounded,
    failure_reason,
    widen,
)
from envforge.errors import ResolveError
from envforge.host import proc
from envforge.importers.render import Draft

UV_FAILURE = (  # what resolve/pypi.py raised for a build failure, as users saw it cut
    "PyPI resolution for linux-64 (Python 3.7.16) failed: /root/.venv/bin/uv pip compile "
    "/tmp/envforge-pypi-k2j3/requirements.in --quiet --no-header --format pylock.toml "
    "--output-file /tmp/envforge-pypi-k2j3/pylock.toml --python-version 3.7.16 exited 1:\n"
    "    error: Failed to build `pyyaml==3.12`\n"
    "      Caused by: The build backend returned an error\n"
    "      Caused by: Call to `setuptools.build_meta:__legacy__.build_wheel` failed "
    "(exit status: 1)")


def test_a_failure_is_the_tools_words_without_its_command_line() -> None:
    reason = failure_reason(UV_FAILURE)
    assert reason == ("PyPI resolution for linux-64 (Python 3.7.16) failed: error: Failed to "
                      "build `pyyaml==3.12` Caused by: The build backend returned an error "
                      "Caused by: Call to `setuptools.build_meta:__legacy__.build_wheel` "
                      "failed (exit status: 1)")
    assert "\n" not in reason and "uv pip compile" not in reason
    long = failure_reason("x exited 1:\n" + "word " * 500)
    assert len(long) == 600 and long.endswith("…")


def test_a_build_log_without_uvs_error_line_ends_on_its_last_lines() -> None:
    tail = ("PyPI resolution for linux-64 (Python 3.7.16) failed: uv pip compile x exited 1:\n"
            "    exec(code, locals())\n"
            '    File "/root/.cache/uv/sdists-v11/pypi/toolz/0.8.0/src/toolz/functoolz.py", '
            "line 467\n      f.__name__ for f in reversed((self.first,) + self.funcs),\n"
            "      ^\n    SyntaxError: Generator expression must be parenthesized\n"
            "    hint: This usually indicates a problem with the package or the build "
            "environment.")
    reason = failure_reason(tail)
    assert reason.startswith("PyPI resolution for linux-64 (Python 3.7.16) failed: File ")
    assert reason.endswith("^ SyntaxError: Generator expression must be parenthesized")


def test_a_real_failure_message_is_reduced_to_what_the_tool_said() -> None:
    done = proc.run([sys.executable, "-c", "import sys; sys.exit('error: no such thing')"],
                    check=False)
    reason = failure_reason(str(ResolveError(f"PyPI resolution failed: "
                                             f"{proc.describe_failure(done)}")))
    assert reason == "PyPI resolution failed: error: no such thing"


def test_widen_moves_by_calendar_months() -> None:
    assert widen(date(2018, 3, 15)) == date(2018, 9, 15)
    assert widen(date(2018, 8, 31)) == date(2019, 2, 28)
    assert widen(date(2018, 3, 15), 24) == date(2020, 3, 15)


@pytest.mark.posix_only(reason="ends its children through /proc")
def test_the_time_bound_ends_the_process_the_work_started() -> None:
    started: list[subprocess.Popen[bytes]] = []

    def work() -> str | None:
        child = subprocess.Popen(["sleep", "30"])
        started.append(child)
        child.wait()
        return None

    begun = time.monotonic()
    with pytest.raises(DraftTimeoutError, match="time bound"):
        _bounded(work, time.monotonic() + 0.5)
    assert time.monotonic() - begun < 5
    assert started[0].wait(timeout=5) != 0  # ended by its id, not left to run 30 s


def test_a_fetch_failure_blames_the_url_dependency_it_names() -> None:
    url = ("tensorflow-gpu @ https://storage.googleapis.com/tensorflow/linux/gpu/"
           "tensorflow_gpu-1.3.0-cp35-cp35m-linux_x86_64.whl")
    failure = ("PyPI resolution for linux-64 (Python 3.7.16) failed: error: Failed to download "
               f"`{url}` cause: Request failed after 3 retries")
    assert _blames_url(failure, [url])
    assert not _blames_url("numpy==9 cannot be installed", [url])


def test_a_pack_refusal_moves_the_pin_its_first_installable_repair_names() -> None:
    """pytorch-semseg (2019-03): torch 1.0.0 with torchvision 0.3.0; the torch pack proposes
    torchvision 0.2.2 (every file yanked) or torch 1.1.0 (0.3.0's own): torch moves."""
    from envforge.app.settling import _repair_compat
    from envforge.errors import CompatibilityError
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    def wheel(name: str, version: str, *, yanked: bool = False) -> dict[str, object]:
        return {"filename": f"{name}-{version}-cp37-cp37m-manylinux1_x86_64.whl",
                "upload-time": "2019-05-01T00:00:00Z", "yanked": yanked}

    listings = {"torchvision": [wheel("torchvision", "0.2.2", yanked=True),
                                wheel("torchvision", "0.3.0")],
                "torch": [wheel("torch", "1.0.0"), wheel("torch", "1.1.0")]}
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[
            Found("torch==1.0.0", "requirements.txt:4"),
            Found("torchvision==0.3.0", "requirements.txt:5")])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2019-05-22", ""))
    refusal = CompatibilityError(
        "linux-64: pypi torchvision==0.3.0 with pypi torch==1.0.0: torch 1.0.0 goes with "
        "torchvision >=0.2.2,<0.2.3; more", source="the pairing table", fix="pin ...",
        repairs=("torchvision>=0.2.2,<0.2.3", "torch==1.1.0"))
    repaired = _repair_compat(draft, refusal, lambda index, name: listings[name])
    assert repaired is not None
    torch, vision = repaired[0].repository.imported.requirements
    assert (torch.requirement, vision.requirement) == ("torch==1.1.0", "torchvision==0.3.0")
    assert torch.note.startswith("was torch==1.0.0: pypi torchvision==0.3.0 with pypi "
                                 "torch==1.0.0: torch 1.0.0 goes with torchvision")
    assert _repair_compat(draft, CompatibilityError("x", source="s", fix="f"),
                          lambda index, name: listings[name]) is None
    # yanked for the reason PyPI gives ([[yanked_release]]): an exact pin installs it (PEP
    # 592), so the first repair, torch 1.0's own torchvision, is taken and torch stays
    reason = "So that users won't accidentally install this when using python 3.11"
    listings["torchvision"][0] = {**listings["torchvision"][0], "yanked": reason}
    kept = _repair_compat(draft, refusal, lambda index, name: listings[name])
    assert kept is not None
    torch, vision = kept[0].repository.imported.requirements
    assert (torch.requirement, vision.requirement) == ("torch==1.0.0", "torchvision==0.2.2")


def test_a_pin_another_pin_rules_out_is_read_from_the_resolver_s_words_in_brackets_too(
        ) -> None:
    """uv names a dependency in an aside, "(torchvision==0.5.0 depends on torch==1.4.0)":
    the bracket ended the version read (``==1.4.0)``), and init crashed with "unexpected
    error" (kuangliu/pytorch-cifar's torch and torchvision, trying a yanked torchvision)."""
    from envforge.app.settling import _repair_conflict
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    def wheel(name: str, version: str) -> dict[str, object]:
        return {"filename": f"{name}-{version}-cp37-cp37m-manylinux1_x86_64.whl",
                "upload-time": "2020-01-15T00:00:00Z"}

    listings = {"torch": [wheel("torch", "1.3.1"), wheel("torch", "1.4.0")]}
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[
            Found("torch==1.3.1", "requirements.txt:1"),
            Found("torchvision==0.5.0", "requirements.txt:2")])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2020-01-20", ""))
    failure = ("torchvision==0.5.0 cannot be used with torch==1.3.1 (torchvision==0.5.0 "
               "depends on torch==1.4.0)")
    repaired = _repair_conflict(draft, failure, lambda index, name: listings[name])
    assert repaired is not None
    assert repaired[0].repository.imported.requirements[0].requirement == "torch==1.4.0"
    assert _repair_conflict(draft, "x==1 depends on torch==)(", lambda i, n: []) is None
    # every repair that writes an exact pin counts a release yanked for newer Pythons only
    # ([[yanked_release]]: an exact pin installs it, PEP 592), as the repository's own pins do
    reason = "So that users won't accidentally install this when using python 3.11"
    vision = {"filename": "torchvision-0.2.2-py2.py3-none-any.whl",
              "upload-time": "2019-02-27T00:00:00Z", "yanked": reason}
    pinned = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[
            Found("torchvision==0.2.1", "requirements.txt:1")])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2019-03-08", ""))
    aside = "(pretrainedmodels==0.7.4 depends on torchvision>=0.2.2,<0.3)"
    moved = _repair_conflict(pinned, aside, lambda index, name: [vision])
    assert moved is not None
    assert moved[0].repository.imported.requirements[0].requirement == "torchvision==0.2.2"
    assert _repair_conflict(pinned, aside, lambda index, name: [
        {**vision, "yanked": "a broken upload"}]) is None


def test_a_trial_build_that_fails_moves_an_exact_pin_else_leaves_the_requirement_out() -> None:
    """What init's trial build of a resolved sdist found: an exact pin moves to the nearest
    later release with a wheel (as for a build uv failed); a requirement with nothing to move
    to (pydensecrf: one release, an sdist) is left out with the build's reason and the code
    that imports it; a dependency no requirement names changes nothing here."""
    from envforge.app.settling import _unbuilt
    from envforge.app.trialbuild import BuildFailure
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.pycode import CodeScan
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    listing = [{"filename": "demo-1.0.tar.gz", "upload-time": "2019-01-01T00:00:00Z"},
               {"filename": "demo-1.1-cp37-cp37m-manylinux1_x86_64.whl",
                "upload-time": "2019-06-01T00:00:00Z"}]
    draft = Draft(name="r", source="r", platform="linux-64",
                  repository=Repository(("requirements.txt",), Imported(requirements=[
                      Found("demo==1.0", "requirements.txt:1"),
                      Found("pydensecrf", "requirements.txt:2")])),
                  python=Proposal("3.7.16", ""), as_of=Proposal("2019-03-06", ""),
                  code=CodeScan(files=1, failing=(), imports={"pydensecrf": "test.py:13"}))
    error = "src/x.c:3:10: error: 'PyThreadState' has no member named 'exc_type'"
    moved = _unbuilt(draft, BuildFailure("demo", "1.0", error), lambda index, name: listing)
    assert moved is not None
    assert moved[0].repository.imported.requirements[0].requirement == "demo==1.1"
    assert moved[1] == "demo==1.0: its sdist does not build; moved to demo==1.1"
    assert f"its sdist does not build for Python 3.7: {error}" in \
        moved[0].repository.imported.requirements[0].note

    left = _unbuilt(draft, BuildFailure("pydensecrf", "1.0rc3", error), lambda index, name: [])
    assert left is not None
    assert left[0].left_out == {"pydensecrf": (
        f"pydensecrf 1.0rc3's sdist does not build for Python 3.7 (tried as apply builds it): "
        f"{error}; test.py:13 imports pydensecrf, which will not run without it")}
    assert left[1] == f"left out pydensecrf: pydensecrf 1.0rc3's sdist does not build: {error}"
    assert _unbuilt(draft, BuildFailure("cython", "0.29", error), lambda i, n: []) is None


def test_a_widened_day_is_narrowed_from_the_failure_of_the_python_it_keeps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The proposed day fails for the newest Python of the day, then for the one a minor
    older; the day is widened and resolves with the newest: narrowing reads the newest's
    failure at the proposed day (what names the package it needs), not the older's."""
    from envforge.app import settling
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository
    from envforge.lockfile import ApplyInputs, Expectations, PlatformLock

    locked = PlatformLock(python="3.8.20", environment="venv", apply=ApplyInputs(),
                          expect=Expectations(versions={}, device="cpu", float_x="float64"))
    said = {("2019-11-15", "3.8"): "torch has no wheels for cp38",
            ("2019-11-15", "3.7"): "pillow==9 needs Python 3.8",
            ("2020-05-15", "3.8"): locked}

    def resolved(text: str, _source: str, _platform: str) -> PlatformLock | str:
        day = text.split("\nas_of = ", 1)[1][:10]
        python = text.split('\nversion = "', 1)[1][:3]
        return said[(day, python)]

    narrowed: list[str] = []
    monkeypatch.setattr(settling, "try_lock", resolved)
    monkeypatch.setattr(settling, "_narrowed",
                        lambda *args, **_kw: narrowed.append(args[4]))
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[Found("torch", "requirements.txt:1")])),
        python=Proposal("3.8.20", "the newest Python released by 2019-11-15"),
        python_fallback=Proposal("3.7.16", "older"), as_of=Proposal("2019-11-15", "its day"))
    done = settling.settle(draft, "r.toml", "linux-64", today=date(2020, 6, 1))
    assert done.failure is None and done.draft.python.value == "3.8.20"
    assert narrowed == ["torch has no wheels for cp38"]


def test_what_a_build_imports_undeclared_is_given_to_it_or_its_back_end_constrained() -> None:
    """A module goes into extra_build_dependencies by its distribution ([[import_name]]:
    yaml is PyYAML's); a module a later setuptools removed gives the builds the constraint
    that keeps it ([[build_module]]); a standard-library module, or one given already (the
    pin then moves as for any build that fails), changes nothing."""
    from envforge.app.settling import _build_needs
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    draft = Draft(name="r", source="r", platform="linux-64",
                  repository=Repository(("requirements.txt",), Imported(requirements=[
                      Found("lap==0.4.0", "requirements.txt:1")])),
                  python=Proposal("3.8.18", ""), as_of=Proposal("2020-04-01", ""))
    given = _build_needs(draft, "lap", "0.4.0", "numpy")
    assert given is not None and given[0].extra_build == {"lap": ("numpy",)}
    assert given[1] == ("lap==0.4.0: its sdist's build imports numpy without declaring it; "
                        "given to its build (extra_build_dependencies)")
    assert _build_needs(given[0], "lap", "0.4.0", "numpy") is None
    yaml = _build_needs(given[0], "lap", "0.4.0", "yaml")
    assert yaml is not None and yaml[0].extra_build == {"lap": ("numpy", "PyYAML")}
    kept = _build_needs(draft, "lap", "0.4.0", "distutils.msvccompiler")
    assert kept is not None and list(kept[0].build_constraints) == ["setuptools<74"]
    assert kept[0].extra_build == {}
    assert _build_needs(kept[0], "lap", "0.4.0", "distutils.msvccompiler") is None
    assert _build_needs(draft, "lap", "0.4.0", "distutils") is None  # the standard library


def test_a_failed_trial_build_names_what_it_needs_from_its_log_then_the_knowledge() -> None:
    """fasttext 0.9.1's setup.py catches the ImportError and fails in its own words; the
    knowledge's [[build_requires]] row names pybind11. A log that names the module wins."""
    from envforge.app.settling import _failed_build_needs
    from envforge.app.trialbuild import BuildFailure

    assert _failed_build_needs(BuildFailure("fasttext", "0.9.1",
                                            "RuntimeError: pybind11 install failed.")) == [
        "pybind11"]
    assert _failed_build_needs(BuildFailure("madmom", "0.16.1", "ModuleNotFoundError: No "
                                            "module named 'Cython'")) == ["Cython"]
    assert _failed_build_needs(BuildFailure("toolz", "0.8.0", "SyntaxError: invalid")) == []


def test_a_cython_error_before_cython_3_gives_the_builds_the_eras_cython() -> None:
    """hdbscan 0.8.22's .pyx cimports its .pxd implicitly relative, which Cython 3.0
    (2023-07-17) no longer resolves: a draft of before that day gets `Cython<3` for its
    builds, once; a later day, or another failure, gets nothing."""
    from envforge.app.settling import _era_backend
    from envforge.app.trialbuild import BuildFailure
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    def draft(day: str) -> Draft:
        return Draft(name="r", source="r", platform="linux-64",
                     repository=Repository(("requirements.txt",), Imported(requirements=[
                         Found("hdbscan==0.8.22", "requirements.txt:1")])),
                     python=Proposal("3.7.16", ""), as_of=Proposal(day, ""))

    cython = BuildFailure("hdbscan", "0.8.22",
                          "hdbscan/_hdbscan_linkage.pyx:12:0: 'dist_metrics.pxd' not found")
    given = _era_backend(draft("2019-06-15"), cython)
    assert given is not None and list(given[0].build_constraints) == ["Cython<3"]
    assert given[1] == ("hdbscan==0.8.22: its build fails with today's build back-end; builds "
                        "constrained to Cython<3")
    assert _era_backend(given[0], cython) is None
    assert _era_backend(draft("2024-01-01"), cython) is None
    assert _era_backend(draft("2019-06-15"), BuildFailure("x", "1", "x.c:1:2: error: y")) is None


def test_an_eras_build_constraint_that_did_not_help_leaves_with_the_requirement() -> None:
    """pydensecrf 1.0rc3 (pytorch-semseg) fails under Cython 3 and under `Cython<3` (its
    shipped C++ is Python 3.6's): left out, it no longer leaves `Cython<3` on every build."""
    from envforge.app.settling import _era_backend, _unbuilt
    from envforge.app.trialbuild import BuildFailure
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    draft = Draft(name="r", source="r", platform="linux-64",
                  repository=Repository(("requirements.txt",), Imported(requirements=[
                      Found("pydensecrf", "requirements.txt:1")])),
                  python=Proposal("3.7.16", ""), as_of=Proposal("2019-03-06", ""),
                  build_constraints={"setuptools<74": "lap 0.4.0's build imports it"})
    failed = BuildFailure("pydensecrf", "1.0rc3",
                          "pydensecrf/densecrf.pxd:1:0: 'eigen.pxd' not found")
    given = _era_backend(draft, failed)
    assert given is not None and "Cython<3" in given[0].build_constraints
    left = _unbuilt(given[0], BuildFailure("pydensecrf", "1.0rc3", "eigen.cpp:1: error"), None)
    assert left is not None and "pydensecrf" in left[0].left_out
    assert left[0].build_constraints == {"setuptools<74": "lap 0.4.0's build imports it"}


def test_a_pin_with_no_later_wheel_moves_once_to_the_next_sdist_then_is_left_out() -> None:
    """hdbscan's releases of 2019 are sdists only: 0.8.22's failed build moves the pin to
    0.8.23, which init builds next; a second failure leaves the requirement out."""
    from envforge.app.settling import NEXT_SDIST_NOTE, _unbuilt
    from envforge.app.trialbuild import BuildFailure
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository

    listing = [{"filename": "demo-1.0.tar.gz", "upload-time": "2019-01-01T00:00:00Z"},
               {"filename": "demo-1.1.tar.gz", "upload-time": "2019-06-01T00:00:00Z"},
               {"filename": "demo-2.0.tar.gz", "upload-time": "2020-06-01T00:00:00Z"}]
    draft = Draft(name="r", source="r", platform="linux-64",
                  repository=Repository(("requirements.txt",), Imported(requirements=[
                      Found("demo==1.0", "requirements.txt:1")])),
                  python=Proposal("3.7.16", ""), as_of=Proposal("2019-03-06", ""))
    error = "demo/x.c:3:10: error: no such thing"
    moved = _unbuilt(draft, BuildFailure("demo", "1.0", error), lambda index, name: listing)
    assert moved is not None
    found = moved[0].repository.imported.requirements[0]
    assert found.requirement == "demo==1.1" and NEXT_SDIST_NOTE in found.note
    again = _unbuilt(moved[0], BuildFailure("demo", "1.1", error), lambda i, n: listing)
    assert again is not None and "demo==1.1" in again[0].left_out


def _requirements_draft(requirements: Sequence[str], *, python: str, day: str) -> Draft:
    """A draft of a requirements.txt holding ``requirements``, one a line."""
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.repository import Repository

    return Draft(name="r", source="r", platform="linux-64",
                 repository=Repository(("requirements.txt",), Imported(requirements=[
                     Found(r, f"requirements.txt:{n}") for n, r in enumerate(requirements, 1)])),
                 python=Proposal(python, ""), as_of=Proposal(day, ""))


def test_timm_before_0_4_5_caps_torch_below_1_9() -> None:
    """misads/easy_detection (2022-04-01): its install.sh pins timm==0.1.30 (a later one
    breaks its code), its imports bring torch, which its day resolved to 1.11.0, and
    ``import timm`` failed on ``torch._six.container_abcs``, gone in torch 1.9."""
    from envforge.app.settling import _capped_for_dependencies

    draft = _requirements_draft(("timm==0.1.30", "torch", "torchvision"), python="3.8.18",
                                day="2022-04-01")
    capped = _capped_for_dependencies(draft, {"timm": "0.1.30", "torch": "1.11.0",
                                              "torchvision": "0.12.0"})
    assert capped is not None
    assert capped[1] == ("torch: capped <1.9: timm 0.1.30 (as resolved) uses "
                         "torch._six.container_abcs, which torch 1.9 removed")
    assert capped[0].repository.imported.requirements[1].requirement == "torch<1.9"
    assert _capped_for_dependencies(draft, {"timm": "0.4.5", "torch": "1.11.0"}) is None


@pytest.mark.network
def test_the_timm_and_torch_rows_facts_read_from_their_wheels() -> None:
    """The row's facts, read again from PyPI's wheels by byte ranges: timm 0.1.30 imports
    ``torch._six.container_abcs`` at module level, 0.4.5 does not; torch 1.8.1's ``_six``
    defines it, 1.9.0's does not."""
    import zipfile

    from envforge.host.http import session
    from envforge.resolve.pypi_index import index_files
    from envforge.resolve.remotewheel import RangeFile

    def member(project: str, filename: str, name: str) -> str:
        entry = next(f for f in index_files("https://pypi.org/simple", project) or ()
                     if f["filename"] == filename)
        with session() as http:
            wheel = zipfile.ZipFile(RangeFile(http, entry["url"], int(entry["size"]), 60,
                                              limit=None))
            return wheel.read(name).decode()

    helpers = "timm/models/layers/helpers.py"
    assert "from torch._six import container_abcs" in \
        member("timm", "timm-0.1.30-py3-none-any.whl", helpers)
    assert "container_abcs" not in member("timm", "timm-0.4.5-py3-none-any.whl", helpers)
    six = "torch/_six.py"
    assert "container_abcs = " in \
        member("torch", "torch-1.8.1-cp38-cp38-manylinux1_x86_64.whl", six)
    assert "container_abcs" not in \
        member("torch", "torch-1.9.0-cp38-cp38-manylinux1_x86_64.whl", six)


def test_a_dependency_using_what_another_removed_caps_that_other_below_the_removal() -> None:
    """NVIDIA/tacotron2 (2020-06-11) pins librosa==0.6.0, whose decorators.py imports
    numba.decorators at import; that day resolved numba 0.50.0, which removed it
    ([[dependency_removed_api]]): numba is capped where a requirement names it, else added
    from librosa's line; a pin of numba, or a numba before 0.50, or librosa 0.8 is left."""
    from envforge.app.settling import _capped_for_dependencies

    def draft(*requirements: str) -> Draft:
        return _requirements_draft(requirements, python="3.7.16", day="2020-06-11")

    resolved = {"librosa": "0.6.0", "numba": "0.50.0"}
    added = _capped_for_dependencies(draft("torch", "librosa==0.6.0"), resolved)
    assert added is not None
    assert added[1] == ("added numba<0.50: librosa 0.6.0 (as resolved) uses numba.decorators, "
                        "which numba 0.50 removed")
    last = added[0].repository.imported.requirements[-1]
    assert (last.requirement, last.origin) == ("numba<0.50", "requirements.txt:2")
    assert _capped_for_dependencies(added[0], {**resolved, "numba": "0.49.1"}) is None
    capped = _capped_for_dependencies(draft("numba>=0.43", "resampy"), resolved)
    assert capped is not None
    first = capped[0].repository.imported.requirements[0]
    assert first.requirement == "numba<0.50,>=0.43" and first.origin == "requirements.txt:1"
    assert "capped <0.50: librosa 0.6.0 (as resolved) uses numba.decorators" in first.note
    assert _capped_for_dependencies(draft("numba==0.50.0", "librosa"), resolved) is None
    assert _capped_for_dependencies(draft("librosa"), {**resolved, "librosa": "0.8.0"}) is None


def test_the_releases_built_against_another_torch_are_excluded() -> None:
    """jadore801120/attention-is-all-you-need-pytorch pins torch==1.3.1 and imports torchtext,
    which its day resolved to 0.8.0: a wheel whose extension was built against torch 1.7.0
    while its metadata names torch unpinned (`import torchtext`: libtorch_cpu.so not found).
    [[built_against]] excludes the compiled releases built against another torch (all three
    beside 1.3.1: 0.6.0, pure Python, resolves); beside torch 1.7.0 only 0.7.0 and 0.8.1, so
    0.8.0, built against it, stays allowed; a pin of torchtext, or 0.6.0, are left."""
    from envforge.app.settling import _capped_for_dependencies

    def draft(*requirements: str) -> Draft:
        return _requirements_draft(requirements, python="3.6.15", day="2021-02-17")

    resolved = {"torch": "1.3.1", "torchtext": "0.8.0"}
    capped = _capped_for_dependencies(draft("torch==1.3.1", "torchtext"), resolved)
    assert capped is not None
    assert capped[1].startswith("torchtext: capped !=0.7.0,!=0.8.0,!=0.8.1: torchtext 0.8.0 "
                                "(as resolved) carries an extension built against another "
                                "torch than 1.3.1")
    assert capped[0].repository.imported.requirements[1].requirement == \
        "torchtext!=0.7.0,!=0.8.0,!=0.8.1"
    assert _capped_for_dependencies(capped[0], {**resolved, "torchtext": "0.6.0"}) is None
    assert _capped_for_dependencies(draft("torch", "torchtext"),
                                    {"torch": "1.7.0", "torchtext": "0.8.0"}) is None
    newer = _capped_for_dependencies(draft("torch==1.7.0", "torchtext"),
                                     {"torch": "1.7.0", "torchtext": "0.8.1"})
    assert newer is not None
    assert newer[0].repository.imported.requirements[1].requirement == \
        "torchtext!=0.7.0,!=0.8.1"
    assert _capped_for_dependencies(draft("torch==1.3.1", "torchtext==0.8.0"), resolved) is None
    added = _capped_for_dependencies(draft("torch==1.3.1", "spacy"),
                                     {**resolved, "torchtext": "0.7.0"})
    assert added is not None
    last = added[0].repository.imported.requirements[-1]
    assert (last.requirement, last.origin) == ("torchtext!=0.7.0,!=0.8.0,!=0.8.1",
                                               "requirements.txt:1")


def test_what_narrowing_held_back_is_what_the_widened_lock_has_at_another_version() -> None:
    """tkipf/keras-gcn: narrowed to 2018-06-27, astor stayed 0.6.2 where the widened lock had
    0.8.0; those releases (and only those) are compiled by the target Python, as 0.6.2's
    ``async=False`` does not parse on 3.7."""
    from envforge.app.settling import held_back
    from envforge.lockfile import ApplyInputs, Expectations, LockedPypiFile, PlatformLock

    def lock(**versions: str) -> PlatformLock:
        return PlatformLock(python="3.7.16", environment="venv", apply=ApplyInputs(),
                            expect=Expectations(versions={}, device="cpu", float_x="float64"),
                            pypi=tuple(LockedPypiFile(
                                name=n.replace("_", "-"), version=v, kind="wheel",
                                filename=f"{n}-{v}-py2.py3-none-any.whl",
                                url=f"https://x.invalid/{n}-{v}.whl", sha256="a" * 64)
                                for n, v in versions.items()))

    widened = lock(astor="0.8.0", six="1.12.0", tensorflow="1.14.0")
    narrowed = lock(astor="0.6.2", six="1.12.0", tensorflow="1.14.0", termcolor="1.1.0")
    assert held_back(narrowed, widened) == {"astor": "0.6.2"}


def test_a_proposed_day_that_ran_out_of_time_is_narrowed_as_slow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The proposed day's try runs out of its share (DraftTimeoutError, no deadline of init's
    reached); the widened day resolves: narrowing is asked to read the day as slow, so it
    starts from what that day has only as sdists (a conflict's failure is not slow)."""
    from envforge.app import settling
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository
    from envforge.lockfile import ApplyInputs, Expectations, PlatformLock

    locked = PlatformLock(python="3.7.16", environment="venv", apply=ApplyInputs(),
                          expect=Expectations(versions={}, device="cpu", float_x="float64"))

    def resolved(text: str, _source: str, _platform: str) -> PlatformLock | str:
        day = text.split("\nas_of = ", 1)[1][:10]
        if day == "2018-06-27":
            raise DraftTimeoutError("its share ran out")
        return locked

    slow: list[bool] = []
    monkeypatch.setattr(settling, "try_lock", resolved)
    monkeypatch.setattr(settling, "_narrowed",
                        lambda *args, **kw: slow.append(kw["slow"]))
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[Found("scipy", "requirements.txt:1")])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2018-06-27", "its day"))
    done = settling.settle(draft, "r.toml", "linux-64", today=date(2019, 1, 1),
                           deadline=time.monotonic() + 600)
    assert done.failure is None and slow == [True]


def test_releases_held_back_with_no_time_left_to_compile_keep_the_widened_day(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """fchollet/deep-learning-models' init narrowed to 2018-06-27 with under TRY_S left, took
    astor 0.6.2 (``async=False``: a SyntaxError on 3.7) uncompiled, and said it resolved: an
    unchecked narrowing is not taken; the widened day is, and init says why."""
    from envforge.app import settling, trialcompile
    from envforge.importers import Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.repository import Repository
    from envforge.lockfile import ApplyInputs, Expectations, LockedPypiFile, PlatformLock

    def lock(**versions: str) -> PlatformLock:
        return PlatformLock(python="3.7.16", environment="venv", apply=ApplyInputs(),
                            expect=Expectations(versions={}, device="cpu", float_x="float64"),
                            pypi=tuple(LockedPypiFile(
                                name=n, version=v, kind="wheel",
                                filename=f"{n}-{v}-py2.py3-none-any.whl",
                                url=f"https://x.invalid/{n}-{v}.whl", sha256="a" * 64)
                                for n, v in versions.items()))

    widened, narrowed = lock(astor="0.8.0", six="1.12.0"), lock(astor="0.6.2", six="1.12.0")
    left = iter([100.0])
    monkeypatch.setattr(settling, "_left", lambda _deadline: next(left, 1.0))
    monkeypatch.setattr(settling, "index_view", lambda *args: None)
    monkeypatch.setattr(trialcompile, "trial_compile", lambda *args: pytest.fail("compiled"))
    monkeypatch.setattr(settling, "narrow",
                        lambda draft, _locked, *, unbuilt, **kw: (draft, unbuilt(narrowed)))
    said: list[str] = []
    draft = Draft(name="r", source="r", platform="linux-64",
                  repository=Repository(("requirements.txt",), Imported()),
                  python=Proposal("3.7.16", ""), as_of=Proposal("2018-06-27", "its day"))
    assert settling._narrowed(draft, widened, date(2018, 6, 27), date(2019, 6, 27), "x", "r",
                              "linux-64", 0.0, lambda *args: None, said.append) is None
    assert said == ["the widened day kept: the releases narrowing held back (astor) were not "
                    "compiled by the target Python in the time left"]
    left = iter([100.0, 100.0])
    monkeypatch.setattr(trialcompile, "trial_compile", lambda *args: ())
    assert settling._narrowed(draft, widened, date(2018, 6, 27), date(2019, 6, 27), "x", "r",
                              "linux-64", 0.0, lambda *args: None, said.append) == (draft, None)


def test_a_project_with_no_release_by_the_day_gets_its_own_day_not_a_widened_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pytorch/text 0.4.0 (2019-08-02) names codecov, every PyPI upload of which is of
    2023-04-17: lock's fix gives it that day alone; init did not take it, widened every
    package's day four times and stopped. Now the day stays and codecov gets its own."""
    from envforge.app import settling
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import Draft
    from envforge.importers.repository import Repository
    from envforge.lockfile import ApplyInputs, Expectations, PlatformLock

    locked = PlatformLock(python="3.7.16", environment="venv", apply=ApplyInputs(),
                          expect=Expectations(versions={}, device="cpu", float_x="float64"))
    texts: list[str] = []

    def resolved(text: str, _source: str, _platform: str) -> PlatformLock | str:
        texts.append(text)
        if '"codecov" = 2023-04-18' in text:
            return locked
        return ("r.toml:12: pypi.packages: codecov cannot be installed on Python 3.7.16 "
                "(linux-64): the index has no release for Python 3.7.16 uploaded by "
                "2019-08-02; fix: set [pypi] as_of to 2023-04-17 or later, or give codecov "
                'alone that day (as_of_packages = { "codecov" = 2023-04-17 })')

    monkeypatch.setattr(settling, "try_lock", resolved)
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[Found("codecov", "requirements.txt:3")])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2019-08-02", "its day"))
    done = settling.settle(draft, "r.toml", "linux-64", today=date(2026, 1, 1),
                           deadline=time.monotonic() + 600)
    assert done.failure is None and len(texts) == 2
    assert done.draft.as_of.value == "2019-08-02" and not done.draft.as_of_tried
    assert done.draft.as_of_packages == {"codecov": "2023-04-18"}
    [found] = done.draft.repository.imported.requirements
    assert found.note == ("as_of_packages gives codecov a day of its own: the index has no "
                          "release of it for Python 3.7 uploaded by as_of, its first came "
                          "2023-04-17")


def test_a_page_the_resolver_cannot_read_is_left_out_and_its_local_builds_go_public() -> None:
    """uv's words for an unreachable ``-f`` page: that page is left out (written commented,
    with why) and, once no page or extra index is left, each local build's pin takes its
    public release; with another source left, the pins stay as written."""
    from envforge.app.packs import installed_packs
    from envforge.app.settling import _unreachable_sources, _without_sources
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import render_spec
    from envforge.importers.repository import Repository

    page, index = "https://download.pytorch.org/whl/torch_stable.html", "https://i.example/simple"
    failure = (f"PyPI resolution for linux-64 (Python 3.8.18) failed: error: Failed to read "
               f"`--find-links` URL: {page} cause: Request failed after 3 retries in 10.3s")

    def draft(*extra: str) -> Draft:
        return Draft(name="r", source="r", platform="linux-64", repository=Repository(
            ("requirements.txt",), Imported(
                requirements=[Found("torch==1.4.0+cpu", "requirements.txt:2")],
                find_links=[(page, "requirements.txt:1")],
                extra_indexes=[(url, "requirements.txt:3") for url in extra])),
            python=Proposal("3.8.18", ""), as_of=Proposal("2020-03-01", ""))

    alone = draft()
    assert _unreachable_sources(alone, failure) == (page,)
    assert _unreachable_sources(alone, "error: no version of torch==1.4.0+cpu") == ()
    left = _without_sources(alone, (page,), failure)
    assert _unreachable_sources(left, failure) == ()  # once: never left out twice
    assert left.left_out == {page: f"the resolver cannot reach it: {failure}"}
    assert [f.requirement for f in left.repository.imported.requirements] == ["torch==1.4.0"]
    text = render_spec(left, installed_packs())
    assert f"# left out {page}: the resolver cannot reach it: " in text
    assert "find_links =" not in text and '"torch==1.4.0",' in text
    both = _without_sources(draft(index), (page,), failure)
    assert [f.requirement for f in both.repository.imported.requirements] == \
        ["torch==1.4.0+cpu"]
    assert f'extra_indexes = ["{index}"]' in render_spec(both, installed_packs())


def test_an_index_the_resolver_cannot_reach_is_left_out_for_pypi() -> None:
    """A requirements file's ``-i`` of an index this host cannot reach: uv names its page of
    one project; the spec then resolves from PyPI (no ``index =``), the index commented with
    why; its local builds go public only once no page is left either."""
    from envforge.app.packs import installed_packs
    from envforge.app.settling import _unreachable_sources, _without_sources
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import render_spec
    from envforge.importers.repository import Repository

    index, page = "https://pypi.corp.example/simple/", "https://pages.example/whl.html"
    failure = (f"error: Request failed after 3 retries cause: Failed to fetch: "
               f"{index}torch/ cause: dns error")
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(
            requirements=[Found("torch==1.4.0+cpu", "requirements.txt:3")],
            index=[(index, "requirements.txt:1")], find_links=[(page, "requirements.txt:2")])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2020-03-01", ""), index=index)
    assert _unreachable_sources(draft, failure) == (index,)
    left = _without_sources(draft, (index,), failure)
    assert left.index is None and _unreachable_sources(left, failure) == ()
    assert [f.requirement for f in left.repository.imported.requirements] == \
        ["torch==1.4.0+cpu"]  # the page may still serve it
    text = render_spec(left, installed_packs())
    assert "index =" not in text
    assert f"# pip's -i at requirements.txt:1\n# left out {index}: the resolver cannot reach " \
           "it: error: Request failed" in text
    gone = _without_sources(left, (page,), failure)
    assert [f.requirement for f in gone.repository.imported.requirements] == ["torch==1.4.0"]


def test_a_wheel_url_the_resolver_cannot_fetch_takes_its_release_a_git_url_is_left_out() -> None:
    """A wheel's file name gives its release (the public one of a local build), which the
    index has; a git URL names none and is left out, as before."""
    from envforge.app.settling import _without_urls
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.repository import Repository

    wheel = ("torch @ https://download.pytorch.org/whl/cpu/torch-1.4.0%2Bcpu-cp37-cp37m-"
             "linux_x86_64.whl ; sys_platform == 'linux'")
    git = "tool @ git+https://github.com/o/tool@abc"
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[
            Found(wheel, "requirements.txt:1"), Found(git, "requirements.txt:2"),
            Found("six==1.14.0", "requirements.txt:3")])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2020-03-01", ""))
    done = _without_urls(draft, (wheel, git), "error: Failed to fetch")
    torch, tool, six = done.repository.imported.requirements
    assert torch.requirement == 'torch==1.4.0; sys_platform == "linux"'
    assert torch.note == (f"was {wheel}: the resolver cannot fetch it: error: Failed to fetch; "
                          "1.4.0 is the release its file name gives (a local build, +cpu: PyPI "
                          "holds none), from the index")
    assert (tool.requirement, six.requirement) == (git, "six==1.14.0")
    assert done.left_out == {git: "the resolver cannot fetch it: error: Failed to fetch"}


_FEATURE = ("PyPI resolution for linux-64 (Python 3.6.15) failed: error: Failed to build "
            "`markupsafe==1.0` Caused by: The build backend returned an error … File "
            "\"setup.py\", line 6, in <module> from setuptools import setup, Extension, "
            "Feature ImportE")
_PYTHON_REQUIRES = (
    "PyPI resolution for linux-64 (Python 3.7.16) failed: error: Failed to build "
    "`smart-open==2.0.0` cause: The build backend returned an error cause: Call to "
    "`setuptools.build_meta:__legacy__.get_requires_for_build_wheel` failed (exit status: 1) "
    "[stderr] error in smart_open setup command: 'python_requires' must be a string "
    "containing valid version specifiers; Invalid specifier: '>=3.5.*'")


@pytest.mark.parametrize(("failure", "python", "day", "later", "constraint", "said"), [
    # fchollet's notebooks on their day (Python 3.6): Jupyter's jinja2 brings markupsafe 1.0,
    # an sdist whose setup.py imports setuptools' Feature, removed in 46; the day had been
    # widened twice
    (_FEATURE, "3.6.15", "2017-11-19", "2020-06-01", "setuptools<46", "markupsafe==1.0"),
    # Bobyuan1015/KDA on its day (Python 3.7): gensim brings smart-open 2.0.0, whose
    # python_requires='>=3.5.*' setuptools 66 refuses (uv's words, seen here); the day had
    # failed on 3.7 and init fallen back to 3.6
    (_PYTHON_REQUIRES, "3.7.16", "2020-05-18", "2023-02-01", "setuptools<66",
     "smart-open==2.0.0"),
])
def test_the_resolvers_failed_build_of_a_dependency_gets_its_eras_build_back_end(
        failure: str, python: str, day: str, later: str, constraint: str, said: str) -> None:
    """uv's failed metadata build of a dependency no pin names, in words a [[build_error]] row
    matches, gives the draft the row's build constraint on a day before the release that
    broke it; once, and not on a later day."""
    from envforge.app.settling import _era_backend_of
    from envforge.importers import Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.repository import Repository

    def draft(on: str) -> Draft:
        return Draft(name="r", source="r", platform="linux-64",
                     repository=Repository((), Imported()), python=Proposal(python, ""),
                     as_of=Proposal(on, ""))

    given = _era_backend_of(draft(day), failure)
    assert given is not None and list(given[0].build_constraints) == [constraint]
    assert given[1] == (f"{said}: its build fails with today's build back-end; "
                        f"builds constrained to {constraint}")
    assert _era_backend_of(given[0], failure) is None  # once
    assert _era_backend_of(draft(later), failure) is None  # its day had the new release
    assert _era_backend_of(draft(day), "error: no version of x") is None


@pytest.mark.network
@pytest.mark.slow
def test_setuptools_66_refuses_smart_open_2_0_0s_build_and_65_builds_it(tmp_path: Path) -> None:
    """The [[build_error]] row's measurement, again: uv's metadata build of smart-open 2.0.0
    for Python 3.7 fails with today's setuptools in the words the row matches, and passes
    with the row's constraint."""
    import re

    from envforge.host.interpreters import find_interpreter
    from envforge.host.uv import uv_binary
    from envforge.knowledge import knowledge

    row = next(r for r in knowledge().builds.build_error
               if r.build_constraint == "setuptools<66")
    python = find_interpreter("3.7").executable
    constraints = tmp_path / "c.txt"
    constraints.write_text(row.build_constraint + "\n")

    def compile_(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([uv_binary(), "pip", "compile", "-", "--python", str(python),
                               "--no-config", "--cache-dir", str(tmp_path / "cache"), "-q",
                               *extra], input="smart-open==2.0.0\n", text=True,
                              capture_output=True, timeout=600)

    failed = compile_()
    assert failed.returncode != 0 and re.search(row.pattern, " ".join(failed.stderr.split())), \
        failed.stderr
    built = compile_("--build-constraints", str(constraints))
    assert built.returncode == 0, built.stderr


def test_a_failed_build_after_releases_the_resolver_refuses_gives_that_project_its_day() -> None:
    """Python 3.6 on a 2017 day: uv refuses every pandas wheel before 0.25.0 (``pytz
    (>=2011k)``) and backtracks to pandas 0.12.0's sdist, whose build fails, on every day
    widening reaches before 2019-07. pandas takes the day after 0.25.0 came, with why; on a
    later day, or once it has its day, nothing."""
    from envforge.app.packs import installed_packs
    from envforge.app.settling import _refused_metadata_day
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.render import render_spec
    from envforge.importers.repository import Repository

    failure = ("PyPI resolution for linux-64 (Python 3.6.15) failed: error: Failed to build "
               "`pandas==0.12.0` cause: error in pandas setup command: use_2to3 is invalid.")
    draft = Draft(name="r", source="r", platform="linux-64", repository=Repository(
        (), Imported(requirements=[Found("pandas", "main.py:1")])),
        python=Proposal("3.6.15", ""), as_of=Proposal("2017-03-01", ""))
    given = _refused_metadata_day(draft, failure, date(2017, 3, 1))
    assert given is not None and dict(given[0].as_of_packages) == {"pandas": "2019-07-20"}
    assert given[1] == ("pandas: its releases before 2019-07-20 have metadata today's "
                        "resolvers refuse; pandas resolved as of 2019-07-20")
    assert "# pandas from 2019-07-20: every pandas wheel before 0.25.0 requires `pytz " \
        "(>=2011k)`" in render_spec(given[0], installed_packs())
    assert _refused_metadata_day(given[0], failure, date(2017, 3, 1)) is None
    assert _refused_metadata_day(draft, failure, date(2019, 8, 1)) is None
    assert _refused_metadata_day(draft, failure.replace("pandas==0.12.0", "numpy==1.11.3"),
                                 date(2017, 3, 1)) is None


VAE_FAILURE = (  # uv's words at AntixK/PyTorch-VAE 6d6a3f3 (2020-03-02), read here
    "Because there is no version of tb-nightly==1.15.0a20190708 and test-tube==0.7.0 depends "
    "on tb-nightly==1.15.0a20190708, we can conclude that test-tube==0.7.0 cannot be used. "
    "And because you require test-tube==0.7.0, we can conclude that your requirements are "
    "unsatisfiable.")


def _vae_draft(*requirements: str) -> Draft:
    from envforge.importers import Found, Imported
    from envforge.importers.propose import Proposal
    from envforge.importers.repository import Repository

    return Draft(name="r", source="r", platform="linux-64", repository=Repository(
        ("requirements.txt",), Imported(requirements=[
            Found(text, f"requirements.txt:{n}") for n, text in enumerate(requirements, 1)])),
        python=Proposal("3.7.16", ""), as_of=Proposal("2020-03-02", ""))


def test_a_dependencys_pin_of_a_deleted_nightly_is_overridden_where_its_module_is_held(
        ) -> None:
    """test-tube 0.7.0 pins a tb-nightly PyPI deleted; tensorboard, which the requirements
    pin, installs the same package: the pin is overridden away and the spec says why."""
    from envforge.app.packs import installed_packs
    from envforge.app.settling import _repair_deleted
    from envforge.importers.render import render_spec

    draft = _vae_draft("tensorboard==2.1.0", "test-tube==0.7.0")
    repaired = _repair_deleted(draft, VAE_FAILURE)
    assert repaired is not None
    changed, said = repaired
    assert list(changed.overrides) == ['tb-nightly; sys_platform == "never"']
    assert "test-tube==0.7.0 depends on tb-nightly==1.15.0a20190708, which the index no " \
        "longer has; tensorboard installs the same module" in changed.overrides[
            'tb-nightly; sys_platform == "never"']
    assert said.startswith("tb-nightly==1.15.0a20190708, which test-tube==0.7.0 pins")
    assert changed.repository == draft.repository  # tensorboard held: nothing added
    text = render_spec(changed, installed_packs())
    assert 'overrides = ["tb-nightly; sys_platform == \\"never\\""]' in text
    assert _repair_deleted(changed, VAE_FAILURE) is None  # overridden already: no loop
    # no requirement installs its module: the alternative comes unpinned, beside the parent
    alone = _repair_deleted(_vae_draft("test-tube==0.7.0"), VAE_FAILURE)
    assert alone is not None
    added = alone[0].repository.imported.requirements[-1]
    assert (added.requirement, added.origin) == ("tensorboard", "requirements.txt:1")
    # a deleted release with no alternative, or words of another failure: not this repair
    assert _repair_deleted(draft, VAE_FAILURE.replace("tb-nightly", "foo")) is None
    assert _repair_deleted(draft, "No solution found when resolving dependencies") is None


def test_only_a_nightly_the_index_pruned_is_overridden() -> None:
    """A final release missing from the index (its author deleted it) is no rule's: the
    failure stays the resolver's (tensorflow-gpu and tensorflow share a module, but one is
    the GPU build)."""
    from envforge.app.settling import _repair_deleted

    failure = ("Because there is no version of tensorflow-gpu==1.15.9 and x==1.0 depends on "
               "tensorflow-gpu==1.15.9, we can conclude that x==1.0 cannot be used.")
    assert _repair_deleted(_vae_draft("x==1.0"), failure) is None


def test_a_pins_note_of_its_own_day_holds_whatever_day_a_later_step_gives() -> None:
    """spro/practical-pytorch: torch was noted "as_of_packages gives torch 2018-12-08" by the
    repair of the proposed day, then narrowing gave it 2019-05-01 (torchvision 0.3.0's torch):
    the note names no day (as_of_packages does), the progress line does."""
    from envforge.app.settling import _repair_too_new

    draft = _requirements_draft(["torch", "numpy"], python="3.7.16", day="2018-07-28")
    failure = ("torch cannot be installed ...; fix: set [pypi] as_of to 2018-12-07 or later, "
               'or give torch alone that day (as_of_packages = { "torch" = 2018-12-07 })')
    repaired = _repair_too_new(draft, failure)
    assert repaired is not None
    changed, said = repaired
    assert changed.as_of_packages == {"torch": "2018-12-08"}
    assert [f.note for f in changed.repository.imported.requirements] == [
        "as_of_packages gives torch a day of its own: the index has no release of it for "
        "Python 3.7 uploaded by as_of, its first came 2018-12-07", ""]
    assert said == ("as_of_packages gives torch 2018-12-08: the index has no release of it "
                    "for Python 3.7 uploaded by as_of, its first came 2018-12-07")

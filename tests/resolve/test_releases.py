"""An index's files grouped into releases, and which ones a target Python can use by a date."""

from __future__ import annotations

from datetime import date

from packaging.requirements import Requirement

from envforge.resolve.pypi_explain import culprit_message, requirement_line, uv_reason
from envforge.resolve.releases import releases_from_files, usable

FILES = [
    {"filename": "lifelines-0.27.8-py3-none-any.whl", "requires-python": ">=3.7",
     "upload-time": "2023-09-13T15:29:58.123Z"},
    {"filename": "lifelines-0.27.8.tar.gz", "requires-python": ">=3.7",
     "upload-time": "2023-09-13T15:30:01Z"},
    {"filename": "lifelines-0.28.0-py3-none-any.whl", "requires-python": ">=3.9",
     "upload-time": "2024-01-03T10:00:00Z"},
    {"filename": "lifelines-0.14.6.tar.gz", "upload-time": "2018-07-18T01:02:03Z"},
    {"filename": "lifelines-0.14.0.tar.gz", "upload-time": "2018-03-01T01:02:03Z"},
    {"filename": "lifelines-0.13.0.tar.gz", "upload-time": "2018-01-01T00:00:00Z",
     "yanked": True},
    {"filename": "lifelines-0.9.2.win32.exe", "upload-time": "2016-01-01T00:00:00Z"},
]


def test_releases_group_files_skip_yanked_and_unreadable() -> None:
    releases = releases_from_files(FILES)
    assert [str(r.version) for r in releases] == ["0.14.0", "0.14.6", "0.27.8", "0.28.0"]
    assert releases[2].uploaded == date(2023, 9, 13)
    assert releases[3].requires_python == ">=3.9"


def test_usable_filters_by_python_and_date() -> None:
    releases = releases_from_files(FILES)
    assert [str(r.version) for r in usable(releases, "3.7.16", None)] == [
        "0.14.0", "0.14.6", "0.27.8"]
    assert [str(r.version) for r in usable(releases, "3.7.16", date(2018, 6, 1))] == ["0.14.0"]


def test_a_pin_that_needs_a_newer_python_names_versions_and_fixes() -> None:
    message = culprit_message(Requirement("lifelines==0.28.0"), releases_from_files(FILES),
                              python="3.7.16", as_of=None, platform="linux-64")
    assert message is not None
    assert "0.14.0, 0.14.6, 0.27.8" in message
    assert 'pin one of those ("lifelines==0.27.8")' in message
    assert "Requires-Python >=3.9" in message


def test_a_pin_newer_than_as_of_proposes_a_later_date() -> None:
    message = culprit_message(Requirement("lifelines==0.27.8"), releases_from_files(FILES),
                              python="3.7.16", as_of=date(2018, 6, 1), platform="linux-64")
    assert message is not None and "as_of to 2023-09-13 or later, or give lifelines alone " \
        'that day (as_of_packages = { "lifelines" = 2023-09-13 })' in message
    assert "uploaded by 2018-06-01: 0.14.0" in message


def test_a_satisfiable_pin_is_not_the_culprit() -> None:
    assert culprit_message(Requirement("lifelines>=0.14"), releases_from_files(FILES),
                           python="3.7.16", as_of=None, platform="linux-64") is None


def test_a_version_that_never_existed_says_so() -> None:
    message = culprit_message(Requirement("lifelines==9.9"), releases_from_files(FILES),
                              python="3.7.16", as_of=None, platform="linux-64")
    assert message is not None and "no release matching ==9.9 (yanked releases left out" \
        in message


def test_a_project_the_index_does_not_have_says_so() -> None:
    """Keras-GAN's keras-contrib==2.0.8 was only ever on GitHub: no release to date or to
    move to, so the fix is the name or a git line, not as_of."""
    message = culprit_message(Requirement("keras-contrib==2.0.8"), [], python="3.7.16",
                              as_of=date(2019, 5, 1), platform="linux-64")
    assert message is not None and "lists no release of keras-contrib at all" in message
    assert "as_of" not in message and "`NAME @ git+URL`" in message


def test_uv_reason_and_line() -> None:
    output = ("error: No solution found when resolving dependencies\n"
              "  cause: Because a==1 depends on b>2 and b>2 has no version,\n"
              "         we can conclude that a==1 cannot be used.\n"
              "hint: Consider using a higher `--python-version` value.\n")
    assert uv_reason(output) == ("Because a==1 depends on b>2 and b>2 has no version, we can "
                                "conclude that a==1 cannot be used")
    assert uv_reason("error: boom\n") == "uv found no solution"
    # tensorflow-wavenet's narrowed day: the second paragraph names what blocks the release
    # the first one leaves (its estimator's day was too early), the hints are left out
    output = ("error: No solution found when resolving dependencies\n"
              "  cause: Because tensorflow>=1.0.0,<=1.12.0 has no wheels with a matching "
              "Python ABI tag (e.g., `cp37m`) and only the following versions of tensorflow "
              "are available:\n             tensorflow<=1.12.0\n             "
              "tensorflow>=1.13.1\n         we can conclude that tensorflow>=1.0.0,<1.13.1 "
              "cannot be used. (1)\n\n         Because only tensorflow-estimator<=1.10.11 is "
              "available and tensorflow>=1.13.1 depends on tensorflow-estimator>=1.13.0,"
              "<1.14.0rc0, we can conclude that tensorflow>=1.13.1 cannot be used.\n\n"
              "hint: You require CPython 3.7 (`cp37m`), but we only found wheels for "
              "`tensorflow` (v1.12.0)\n")
    reason = uv_reason(output)
    assert reason.startswith("Because tensorflow>=1.0.0,<=1.12.0 has no wheels")
    assert reason.endswith("Because only tensorflow-estimator<=1.10.11 is available and "
                           "tensorflow>=1.13.1 depends on tensorflow-estimator>=1.13.0,"
                           "<1.14.0rc0, we can conclude that tensorflow>=1.13.1 cannot be used")
    text = '[pypi]\npackages = [\n    "numpy",\n    "a==1",\n]\n'
    assert requirement_line(text, "a==1") == 4


def test_the_python_a_fix_names_is_of_the_release_nearest_the_era() -> None:
    """A 2018 project whose requirement admits only releases that need a newer Python: the
    fix names the first of them (0.27.8, Python 3.7), not today's newest (0.28.0, 3.9),
    which the lock of a 2018-era spec showed for torch."""
    message = culprit_message(Requirement("lifelines>=0.27"), releases_from_files(FILES),
                              python="3.6.15", as_of=date(2018, 6, 1), platform="linux-64")
    assert message is not None
    assert "set [python] version to one lifelines 0.27.8 supports (Requires-Python >=3.7)" \
        in message
    message = culprit_message(Requirement("lifelines>=0.27"), releases_from_files(FILES),
                              python="3.6.15", as_of=None, platform="linux-64")
    assert message is not None and "lifelines 0.28.0 supports" in message


def test_a_pin_older_than_every_fitting_release_is_offered_the_nearest_after_it() -> None:
    """hunkim/DeepLearningZeroToAll's torch 0.3-era labs: `torch==0.4.1`, which PyPI never
    had for Python 3.7, was offered torch 1.13.1, the newest; legacy code is nearer the first
    release after its pin, as init moves one."""
    files = [{"filename": f"torch-{v}-cp37-cp37m-manylinux1_x86_64.whl",
              "upload-time": "2019-01-01T00:00:00Z"} for v in ("1.0.0", "1.0.1", "1.13.1")]
    message = culprit_message(Requirement("torch==0.4.1"), releases_from_files(files),
                              python="3.7.16", as_of=None, platform="linux-64")
    assert message is not None and 'pin one of those ("torch==1.0.0")' in message
    newer = culprit_message(Requirement("torch==2.0.0"), releases_from_files(files),
                            python="3.7.16", as_of=None, platform="linux-64")
    assert newer is not None and 'pin one of those ("torch==1.13.1")' in newer


def test_a_later_day_that_fits_the_python_is_not_paired_with_a_python_of_after_it() -> None:
    """spro/practical-pytorch (2018-07-28), unpinned torch on 3.7: the first torch for 3.7
    came 2018-12-07, and the message also offered torch 2.0.0's Python 3.8."""
    files = [{"filename": "torch-1.0.0-cp37-cp37m-manylinux1_x86_64.whl",
              "upload-time": "2018-12-07T00:00:00Z"},
             {"filename": "torch-2.0.0-cp38-cp38-manylinux1_x86_64.whl",
              "requires-python": ">=3.8.0", "upload-time": "2023-03-15T00:00:00Z"}]
    message = culprit_message(Requirement("torch"), releases_from_files(files),
                              python="3.7.16", as_of=date(2018, 7, 28), platform="linux-64")
    assert message is not None and "as_of to 2018-12-07 or later" in message
    assert "[python] version" not in message

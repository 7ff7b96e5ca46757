"""init's proposals from release data: the era first, then the newest Python of that era."""

from __future__ import annotations

from datetime import date

from envforge.importers.propose import (
    Proposal,
    era_for_python,
    nearest_allowed,
    propose_as_of,
    propose_python,
    repair_pin,
    supports_python,
)


def _wheel(name: str, day: str, requires: str | None = None) -> dict[str, object]:
    return {"filename": name, "upload-time": f"{day}T10:00:00Z", "requires-python": requires}


NUMPY_1162 = [  # numpy 1.16.2 as PyPI lists it (a few of its files)
    _wheel("numpy-1.16.2-cp27-cp27mu-manylinux1_x86_64.whl", "2019-02-26"),
    _wheel("numpy-1.16.2-cp36-cp36m-manylinux1_x86_64.whl", "2019-02-26"),
    _wheel("numpy-1.16.2-cp37-cp37m-manylinux1_x86_64.whl", "2019-02-26"),
    _wheel("numpy-1.16.2.zip", "2019-02-26", ">=2.7,!=3.0.*,!=3.1.*,!=3.2.*,!=3.3.*"),
]
SIX_1120 = [_wheel("six-1.12.0-py2.py3-none-any.whl", "2018-12-10"),
            _wheel("six-1.12.0.tar.gz", "2018-12-10")]
SDIST_ONLY = [_wheel("Optunity-1.1.1.tar.gz", "2017-02-01")]
ABI3 = [_wheel("cryptography-3.3-cp36-abi3-manylinux2010_x86_64.whl", "2020-12-08")]


def test_supports_python_reads_wheel_tags_and_requires_python() -> None:
    assert supports_python(NUMPY_1162, "3.7") and not supports_python(NUMPY_1162, "3.8")
    assert supports_python(SIX_1120, "3.11")
    assert supports_python(SDIST_ONLY, "3.10")  # nothing binary to say otherwise
    assert supports_python(ABI3, "3.9") and not supports_python(
        [_wheel("x-1-cp38-abi3-manylinux1_x86_64.whl", "2020-01-01")], "3.7")
    assert not supports_python([_wheel("y-1-py3-none-any.whl", "2021-01-01", ">=3.8")], "3.7")


def test_as_of_is_the_newest_pin_or_a_later_commit() -> None:
    pins = {"numpy==1.16.2": NUMPY_1162, "six==1.12.0": SIX_1120}
    assert propose_as_of(pins, None).value == "2019-02-26"
    assert "numpy==1.16.2" in propose_as_of(pins, None).why
    assert propose_as_of(pins, date(2019, 8, 15)).value == "2019-08-15"
    assert propose_as_of(pins, date(2018, 1, 1)).value == "2019-02-26"
    assert propose_as_of({}, None).value is None


def test_python_is_the_newest_of_the_era_that_every_pin_supports() -> None:
    assert propose_python({"numpy==1.16.2": NUMPY_1162}, "2019-02-26", []).value == "3.7"
    assert propose_python({"six==1.12.0": SIX_1120}, "2020-01-01", []).value == "3.8"
    assert propose_python({"six==1.12.0": SIX_1120}, None, []).value == "3.11"
    assert propose_python({}, "2019-08-15", []).value == "3.7"
    early = propose_python({"six==1.12.0": SIX_1120}, "2017-01-01", [])
    assert early.value == "3.7" and "none of 3.7-3.11 was released by 2017-01-01" in early.why
    assert "the oldest Python envforge proposes" in early.why  # 3.6 was out by then


def test_a_stated_python_wins_and_a_range_limits() -> None:
    assert propose_python({}, None, [("==3.6", "Pipfile:15")]).value == "3.6"
    assert propose_python({"six==1.12.0": SIX_1120}, None,
                          [(">=3.6, <3.9", "setup.cfg:6")]).value == "3.8"


def test_a_stated_python_older_than_any_offered_takes_the_next_that_fits_the_pins() -> None:
    """allenai/citeomatic's env.sh: ``conda create ... python==3.5.2`` and ``tensorflow==1.12.0``
    (cp35 and cp36 wheels, none for 3.7): the 3.5 it states excluded every Python, and the
    legacy default 3.7 moved TensorFlow; now it counts as 3.5 or later, and this host's 3.6
    keeps the pin."""
    only36 = [_wheel("tensorflow-1.12.0-cp36-cp36m-manylinux1_x86_64.whl", "2018-11-08"),
              _wheel("tensorflow-1.12.0-cp35-cp35m-manylinux1_x86_64.whl", "2018-11-08")]
    proposal = propose_python({"tensorflow==1.12.0": only36}, "2020-01-22",
                              [("==3.5.2", "env.sh:16")], older=["3.6"])
    assert proposal.value == "3.6"
    assert proposal.why.endswith("; env.sh:16 states Python 3.5.2, older than any envforge "
                                 "provides: a newer one is taken")
    newer = propose_python({"six==1.12.0": SIX_1120}, "2020-01-22", [("==3.5", "e.yml:3")])
    assert newer.value == "3.8"  # the newest of the day, as with nothing stated
    python2 = propose_python({}, "2019-08-15", [("==2.7", "Pipfile:9")])
    assert python2.value == "3.7"
    assert "Pipfile:9 states Python 2.7, older than any envforge provides" in python2.why


def test_no_python_fits_every_pin_falls_back_with_the_reason() -> None:
    only36 = [_wheel("z-1-cp36-cp36m-manylinux1_x86_64.whl", "2018-01-01")]
    proposal = propose_python({"z==1": only36}, None, [])
    assert proposal.value == "3.7" and "z==1" in proposal.why


NUMPY = [  # numpy's 1.13.3 and 1.14.x as PyPI lists them (a few files each)
    _wheel("numpy-1.13.3-cp36-cp36m-manylinux1_x86_64.whl", "2017-09-29"),
    _wheel("numpy-1.13.3.zip", "2017-09-29"),
    _wheel("numpy-1.14.0-cp36-cp36m-manylinux1_x86_64.whl", "2018-01-06"),
    _wheel("numpy-1.14.6-cp37-cp37m-manylinux1_x86_64.whl", "2018-09-23"),
    _wheel("numpy-1.14.5-cp37-cp37m-manylinux1_x86_64.whl", "2018-06-12"),
    _wheel("numpy-1.15.0rc1-cp37-cp37m-manylinux1_x86_64.whl", "2018-06-21"),
    _wheel("numpy-2.0.0-cp37-cp37m-manylinux1_x86_64.whl", "2024-06-16"),
]


def test_a_pin_without_a_wheel_for_the_python_moves_to_the_nearest_release_with_one() -> None:
    moved = repair_pin(NUMPY, "1.13.3", "3.7")
    assert moved is not None and moved.value == "1.14.5"
    assert "compiled wheels are for cp36, none for cp37" in moved.why
    assert repair_pin(NUMPY, "1.14.5", "3.7") is None  # it has one
    assert repair_pin(NUMPY, "1.14.6", "3.9") == Proposal(
        None, "its compiled wheels are for cp37, none for cp39, and no later release has a "
        "wheel for Python 3.9")


SCIPY = [  # scipy 0.16.0 (2015) to 1.1.0 as PyPI lists them (a few files each)
    _wheel("scipy-0.16.0-cp35-none-win_amd64.whl", "2015-07-24"),
    _wheel("scipy-0.16.0.tar.gz", "2015-07-24"),
    _wheel("scipy-0.19.1-cp36-cp36m-manylinux1_x86_64.whl", "2017-06-23"),
    _wheel("scipy-1.0.0-cp36-cp36m-manylinux1_x86_64.whl", "2017-10-25"),
    _wheel("scipy-1.1.0-cp37-cp37m-manylinux1_x86_64.whl", "2018-06-27"),
    _wheel("scipy-1.5.0-cp37-cp37m-manylinux1_x86_64.whl", "2020-06-21"),
]


def test_a_major_with_no_wheel_for_the_python_moves_to_the_earliest_later_release_saying_so(
        ) -> None:
    """rnn-tutorial-gru-lstm (2015) pins scipy==0.16.0: no 0.x release has a cp37 wheel,
    and its sdist needs a Fortran compiler and a BLAS to build; 1.1.0 is the first with
    one. Its pyzmq==14.7.0 no longer compiles (gcc 12: "size of array element is not a
    multiple of its alignment"), and 15.x and 16.x have no cp37 wheel: 17.1.0 has."""
    moved = repair_pin(SCIPY, "0.16.0", "3.7")
    assert moved is not None and moved.value == "1.1.0"
    assert "no later 0.x release has a wheel for Python 3.7 either" in moved.why
    assert "another major may change the API" in moved.why
    skipped = repair_pin([*SCIPY[:3], _wheel("scipy-2.0.0-cp37-cp37m-manylinux1_x86_64.whl",
                                             "2030-01-01"), *SCIPY[4:]], "0.16.0", "3.7")
    assert skipped is not None and skipped.value == "1.1.0"  # the earliest, not a major's first


def test_an_sdist_only_pin_stays_and_python2_only_ones_move() -> None:
    assert repair_pin(SDIST_ONLY, "1.1.1", "3.7") is None  # counts as buildable
    py2 = [_wheel("mock-1.0.0-py2-none-any.whl", "2015-01-01"),
           _wheel("mock-1.0.0.tar.gz", "2015-01-01"),
           _wheel("mock-2.0.0-py2.py3-none-any.whl", "2016-04-06")]
    moved = repair_pin(py2, "1.0.0", "3.7")
    assert moved is not None and moved.value == "2.0.0"  # 1.x has no other
    assert "only wheels are Python 2's" in moved.why
    absent = repair_pin(NUMPY, "1.13.9", "3.7")
    assert absent is not None and absent.value == "1.14.5"
    assert absent.why.startswith("the index has no such release")


def test_a_day_before_the_pythons_release_moves_to_that_day() -> None:
    """Nothing uploaded before Python 3.7 (2018-06-27, PEP 537) has a wheel for it."""
    moved = era_for_python(Proposal("2016-06-12", "the repository's last commit"), "3.7")
    assert moved.value == "2018-06-27" and "moved to Python 3.7's release day" in moved.why
    kept = Proposal("2019-01-01", "the repository's last commit")
    assert era_for_python(kept, "3.7") == kept
    assert era_for_python(Proposal(None, "no pin"), "3.7").value is None


def test_the_nearest_release_a_dependency_admits() -> None:
    from packaging.specifiers import SpecifierSet

    assert nearest_allowed(NUMPY, "1.13.3", "3.7", SpecifierSet(">=1.14,<1.15")) == "1.14.5"
    assert nearest_allowed(NUMPY, "1.14.6", "3.7", SpecifierSet("<1.14.6")) == "1.14.5"
    assert nearest_allowed(NUMPY, "1.13.3", "3.7", SpecifierSet("<1.14")) is None  # no cp37


REGEX = [  # regex as PyPI lists it (of its files): Windows wheels only, and the sdist
    *[_wheel(f"regex-2017.04.05-cp{v}-none-{p}.whl", "2017-04-05")
      for v in ("27", "35", "36") for p in ("win32", "win_amd64")],
    _wheel("regex-2017.04.05.tar.gz", "2017-04-05"),
    *[_wheel(f"regex-2017.12.05-cp{v}-none-{p}.whl", "2017-12-05")
      for v in ("27", "36", "37") for p in ("win32", "win_amd64")],
    _wheel("regex-2017.12.05.tar.gz", "2017-12-05"),
]


def test_wheels_for_another_platform_leave_a_release_its_sdist_there() -> None:
    """openai/gpt-2's regex==2017.4.5 moved to 2017.12.5 for "a wheel for Python 3.7" that
    was Windows', and Linux built 2017.12.5's sdist all the same: on Linux each is an sdist,
    the pin is kept (and init's trial build tries it); on Windows 2017.4.5 has no cp37 wheel."""
    assert repair_pin(REGEX, "2017.4.5", "3.7", platform="linux-64") is None
    moved = repair_pin(REGEX, "2017.4.5", "3.7", platform="win-64")
    assert moved is not None and moved.value == "2017.12.5"
    assert "none for cp37 on win-64" in moved.why
    numpy = repair_pin(NUMPY, "1.13.3", "3.7", platform="linux-64")
    assert numpy is not None and numpy.value == repair_pin(NUMPY, "1.13.3", "3.7").value


def test_pins_no_candidate_has_files_for_take_an_older_python_this_host_has() -> None:
    """davidsandberg/facenet (2018-04-16) pins tensorflow==1.7, whose wheels stop at cp36:
    on a host with Python 3.6 the pin is kept with it, not moved six releases on for 3.7; a
    range that leaves 3.6 out, or a host without it: the fallback; a pin 3.6 lacks too: the
    Python most pins have files for, still 3.6."""
    tf17 = [_wheel("tensorflow-1.7.0-cp36-cp36m-manylinux1_x86_64.whl", "2018-03-29"),
            _wheel("tensorflow-1.7.0-cp27-cp27mu-manylinux1_x86_64.whl", "2018-03-29")]
    pins = {"tensorflow==1.7": tf17, "six==1.12.0": SIX_1120}
    kept = propose_python(pins, "2018-04-16", [], older=("3.6",))
    assert kept.value == "3.6" and "none of 3.7-3.11 suits tensorflow==1.7" in kept.why
    assert propose_python(pins, "2018-04-16", []).value == "3.7"  # no 3.6 here
    assert propose_python(pins, "2018-04-16", [(">=3.7", "setup.py:9")],
                          older=("3.6",)).value == "3.7"
    only35 = [_wheel("z-1-cp35-cp35m-manylinux1_x86_64.whl", "2017-01-01")]
    most = propose_python({**pins, "z==1": only35}, None, [], older=("3.6",))
    assert most.value == "3.6" and most.why == (  # two of three pins, where 3.7 has one
        "the Python most exact pins have files for (2 of 3): none suits every pin, and "
        "z==1 moves to the nearest release with a wheel for 3.6")
    # a tie keeps 3.7 where no Python of the tie was released by the day (3.6 is not
    # counted on a day before its release: few wheels for it had come)
    tie = {"z==1": only35, "six==1.12.0": SIX_1120}
    assert propose_python(tie, "2015-11-10", [], older=("3.6",)).value == "3.7"
    # pins a candidate suits keep the candidate released by the day, 3.6 or not
    assert propose_python({"six==1.12.0": SIX_1120}, "2018-07-01", [],
                          older=("3.6",)).value == "3.7"


def test_a_day_before_every_candidate_takes_the_python_3_6_this_host_has() -> None:
    """fchollet/deep-learning-with-python-notebooks (2017-11-19): with 3.7 its day moved to
    3.7's release day and its packages past it (Keras 2.2.4 of 2019); with this host's 3.6,
    released by then, the day stays (Keras 2.1.1, TensorFlow 1.4.0); on a day before 3.6's
    own release, without it, or where a pin or a stated range leaves it out, 3.7 as before."""
    from envforge.importers.propose import era_for_python

    kept = propose_python({"six==1.12.0": SIX_1120}, "2017-11-19", [], older=("3.6",))
    assert kept.value == "3.6" and kept.why == (
        "the newest Python released by 2017-11-19 that every exact pin has files for "
        "(six==1.12.0): none of 3.7-3.11 was released by 2017-11-19, and this host has "
        "Python 3.6, so the repository's day is kept")
    assert era_for_python(Proposal("2017-11-19", "x"), "3.6").value == "2017-11-19"
    # a day before 3.6's own release keeps 3.7, as before (Newmu/dcgan_code of 2016-05-17
    # did not resolve on any day 3.6's release day widens to)
    assert propose_python({}, "2016-05-17", [], older=("3.6",)).value == "3.7"
    assert propose_python({}, "2017-11-19", []).value == "3.7"  # no 3.6 here
    assert propose_python({}, "2017-11-19", [(">=3.7", "setup.py:9")],
                          older=("3.6",)).value == "3.7"
    only37 = [_wheel("z-1-cp37-cp37m-manylinux1_x86_64.whl", "2017-01-01")]
    assert propose_python({"z==1": only37}, "2017-11-19", [], older=("3.6",)).value == "3.7"


def test_code_3_7_breaks_takes_3_6_only_until_its_end_of_life() -> None:
    """A generator's ``raise StopIteration`` (PEP 479) on a day 3.6 still lived keeps the
    code as written on the host's 3.6; after its end of life (2021-12-23) the day's releases
    drop its wheels, so 3.7 stays, and so does a Python the repository states."""
    from envforge.importers.propose import older_for_code

    newest = Proposal("3.7", "the newest Python released by 2018-10-16")
    why = "bilm/data.py:358 raises StopIteration into a generator"
    kept = older_for_code(newest, {}, [], ("3.6",), why, "2018-10-16")
    assert kept is not None and kept.value == "3.6" and kept.why.startswith(why)
    assert older_for_code(newest, {}, [], ("3.6",), why, "2022-03-01") is None
    assert older_for_code(newest, {}, [], (), why, "2018-10-16") is None
    assert older_for_code(Proposal("3.7", "stated in setup.py:9"), {}, [], ("3.6",), why,
                          "2018-10-16") is None


def test_a_lines_files_are_its_releases_and_no_others() -> None:
    from envforge.importers.propose import line_files

    files = [{"filename": f"torch-{v}-cp37-cp37m-manylinux1_x86_64.whl"}
             for v in ("1.0.0", "1.0.1", "1.1.0", "10.0.0")]
    assert [f["filename"].split("-")[1] for f in line_files(files, "1.0.*")] == ["1.0.0",
                                                                               "1.0.1"]
    assert line_files(files, "2.*") == []

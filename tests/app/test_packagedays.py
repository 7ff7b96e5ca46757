"""Narrowing a widened day to the packages that needed it: the resolver's words read
(a real uv failure), the index read (PyPI, network), the narrowing's steps given a resolver."""

from __future__ import annotations

from datetime import date

import pytest
from packaging.requirements import Requirement

from envforge.app.packagedays import IndexView, index_view, mentioned, narrow
from envforge.importers import Found, Imported
from envforge.importers.propose import Proposal
from envforge.importers.render import Draft
from envforge.importers.repository import Repository
from envforge.lockfile import ApplyInputs, Expectations, LockedPypiFile, PlatformLock

START, LATER = date(2018, 10, 3), date(2019, 10, 3)
# uv's words at Keras 2.2.4's day, as lock reported them
UV_SAID = ("[pypi] packages cannot be installed together on Python 3.7.16 (linux-64): Because "
           "all versions of tensorflow have no wheels with a matching Python ABI tag (e.g., "
           "`cp37m`) and you require tensorflow, we can conclude that your requirements are "
           "unsatisfiable; fix: set [pypi] as_of to 2020-07-28 or later (Theano-PyMC==1.0.5 is "
           "of 2020-07-28: an exact pin is taken whatever its day)")


def test_the_resolvers_words_name_the_packages_they_say() -> None:
    names = ["tensorflow", "theano-pymc", "numpy", "tensorflow-estimator"]
    assert mentioned(UV_SAID, names) == ["tensorflow", "theano-pymc"]
    assert mentioned("tensorflow==1.13.1 depends on tensorflow-estimator>=1.13.0.", names) == \
        ["tensorflow", "tensorflow-estimator"]
    assert mentioned("numpyx and xnumpy", names) == []


def wheel(name: str, version: str, kind: str = "wheel") -> LockedPypiFile:
    return LockedPypiFile(name=name, version=version, kind=kind,  # type: ignore[arg-type]
                          filename=f"{name}-{version}.{'whl' if kind == 'wheel' else 'tar.gz'}",
                          url=f"https://files.example/{name}-{version}", sha256="a" * 64)


def lock(*files: LockedPypiFile) -> PlatformLock:
    return PlatformLock(python="3.7.16", environment="venv", pypi=files, apply=ApplyInputs(),
                        expect=Expectations(versions={}, device="cpu", float_x="float64"))


WIDENED = lock(wheel("keras", "2.2.4"), wheel("tensorflow", "1.14.0"),
               wheel("tensorboard", "1.14.0"), wheel("numpy", "1.17.2"),
               wheel("pyyaml", "5.1.2", "sdist"), wheel("theano-pymc", "1.0.5", "sdist"),
               wheel("h5py", "2.10.0"))
DAYS = {"keras": date(2018, 10, 3), "tensorflow": date(2019, 6, 19),
        "tensorboard": date(2019, 6, 19), "numpy": date(2019, 8, 26),
        "pyyaml": date(2019, 7, 31)}
NEEDS = {"tensorflow": ["numpy (>=1.14.5)", "tensorboard (<1.15.0,>=1.14.0)",
                        'futures ; python_version < "3"']}
OLDEST = {"numpy": "1.9", "tensorboard": "1.6"}  # by START: numpy 1.15, tensorboard 1.11


def view(read: list[str]) -> IndexView:
    def fits(requirement: Requirement, day: date) -> bool:
        read.append(requirement.name)
        assert day == START
        return requirement.name == "numpy"  # tensorboard 1.14 came after START

    return IndexView(released=lambda name, _v: DAYS.get(name), fits=fits,
                     requires=lambda file: NEEDS.get(file.name),
                     markers={"python_version": "3.7", "python_full_version": "3.7.16"})


def draft() -> Draft:
    return Draft(name="k", source="k", platform="linux-64", repository=Repository(
        ("setup.py",), Imported(requirements=[Found("keras==2.2.4", "setup.py:1"),
                                              Found("tensorflow<2", "x.py:1"),
                                              Found("Theano-PyMC==1.0.5", "y.py:1")])),
        python=Proposal("3.7.16", ""), as_of=Proposal(LATER.isoformat(), "its last commit"))


def test_only_the_named_packages_and_what_no_release_of_the_day_satisfies_move() -> None:
    """The failure names tensorflow (and theano-pymc, an exact pin: already taken whatever
    its day); its tensorboard>=1.14 follows, its numpy>=1.14.5 does not (the day has one),
    nor its Python 2 backport; the narrowed draft keeps the repository's day."""
    tried: list[dict[str, str]] = []
    done = lock(wheel("tensorflow", "1.14.0"), wheel("numpy", "1.15.2"))

    def attempt(trial: Draft) -> PlatformLock | str:
        tried.append(dict(trial.as_of_packages))
        assert trial.as_of.value == START.isoformat()
        return done

    read: list[str] = []
    narrowed = narrow(draft(), WIDENED, start=START, widened=LATER, failure=UV_SAID,
                      attempt=attempt, view=view(read))
    assert narrowed is not None and narrowed[1] is done
    assert tried == [{"tensorboard": "2019-10-03", "tensorflow": "2019-10-03"}]
    assert narrowed[0].as_of_packages == tried[0]
    assert read == ["numpy", "tensorboard"]


def test_each_next_failure_new_sdist_and_failed_build_names_one_more_package() -> None:
    """What the next failure names (pyyaml), then a package the day gives only as an sdist
    where the later day has a wheel (numpy), then one whose sdist does not build (h5py),
    each gets the later day; a failure naming nothing new ends it."""
    results: list[PlatformLock | str] = [
        "Because pyyaml==3.12 has no wheels, we can conclude that it cannot be used",
        lock(wheel("numpy", "1.9.0", "sdist")),
        lock(wheel("numpy", "1.17.2")),
        lock(wheel("numpy", "1.17.2"))]
    tried: list[list[str]] = []

    def attempt(trial: Draft) -> PlatformLock | str:
        tried.append(list(trial.as_of_packages))
        return results.pop(0)

    builds = iter(["h5py", None])
    narrowed = narrow(draft(), WIDENED, start=START, widened=LATER, failure=UV_SAID,
                      attempt=attempt, view=view([]), unbuilt=lambda _lock: next(builds))
    assert narrowed is not None
    assert tried == [["tensorboard", "tensorflow"], ["pyyaml", "tensorboard", "tensorflow"],
                     ["numpy", "pyyaml", "tensorboard", "tensorflow"],
                     ["h5py", "numpy", "pyyaml", "tensorboard", "tensorflow"]]
    assert narrow(draft(), WIDENED, start=START, widened=LATER, failure=UV_SAID,
                  attempt=lambda _t: "keras==2.2.4 fails", view=view([])) is None


def test_a_package_only_the_narrowed_day_resolves_to_gets_the_later_day_too() -> None:
    """tflearn's day (2019-01) pulled toolz in as an sdist, which the later day's lock does
    not hold at all: it takes the later day (no dependency of it to read), then resolves."""
    results: list[PlatformLock | str] = [lock(wheel("toolz", "0.9.0", "sdist")),
                                         lock(wheel("numpy", "1.15.4"))]
    tried: list[list[str]] = []

    def attempt(trial: Draft) -> PlatformLock | str:
        tried.append(list(trial.as_of_packages))
        return results.pop(0)

    narrowed = narrow(draft(), WIDENED, start=START, widened=LATER, failure=UV_SAID,
                      attempt=attempt, view=view([]))
    assert narrowed is not None
    assert tried[-1] == ["tensorboard", "tensorflow", "toolz"]


def test_a_failure_naming_no_package_the_later_day_moved_narrows_nothing() -> None:
    """keras 2.2.4 is of the day itself and theano-pymc an exact pin: no resolution runs."""
    def attempt(_trial: Draft) -> PlatformLock | str:
        raise AssertionError("nothing to give the later day")

    assert narrow(draft(), WIDENED, start=START, widened=LATER,
                  failure="keras==2.2.4 depends on theano-pymc", attempt=attempt,
                  view=view([])) is None


@pytest.mark.network
def test_the_index_says_when_a_release_came_what_it_needs_and_what_a_day_had() -> None:
    """PyPI: TensorFlow 1.13.1 (2019-02-26) needs tensorboard 1.13, which no release of
    2018-10-03 satisfies; its numpy>=1.13.3 one does."""
    from envforge.resolve.pypi_index import index_files

    seen = index_view(lambda index, name: index_files(index, name), "https://pypi.org/simple",
                      "3.7.16", "linux-64")
    assert seen.released("tensorflow", "1.13.1") == date(2019, 2, 26)
    url = ("https://files.pythonhosted.org/packages/d4/29/6b4f1e02417c3a1ccc85380f093556ffd0b"
           "35dc354078074c5195c8447f2/tensorflow-1.13.1-cp37-cp37m-manylinux1_x86_64.whl")
    needs = seen.requires(LockedPypiFile(
        name="tensorflow", version="1.13.1", kind="wheel", url=url, sha256="d" * 64,
        filename="tensorflow-1.13.1-cp37-cp37m-manylinux1_x86_64.whl"))
    assert needs is not None and "tensorboard (<1.14.0,>=1.13.0)" in needs
    assert not seen.fits(Requirement("tensorboard<1.14.0,>=1.13.0"), START)
    assert seen.fits(Requirement("numpy>=1.13.3"), START)


def test_each_package_takes_the_day_after_its_first_release_that_installs() -> None:
    """TensorFlow's first release with a wheel here came 2019-02-26: it takes 2019-02-27,
    and that release's own tensorboard requirement is what is read and given its first day;
    where a tightened day proves too early (the next failure names it), the widened day."""
    firsts = {"tensorflow": (date(2019, 2, 26), ["tensorboard (<1.14.0,>=1.13.0)"]),
              "tensorboard": (date(2019, 2, 25), ["numpy (>=1.12.0)"])}
    seen = view([])
    tight = IndexView(released=seen.released, fits=seen.fits, requires=seen.requires,
                      markers=seen.markers,
                      first=lambda requirement, _after: firsts.get(requirement.name))
    tried: list[dict[str, str]] = []
    results: list[PlatformLock | str] = ["tensorboard==1.13.0 is too old for this",
                                         lock(wheel("tensorflow", "1.13.1"))]

    def attempt(trial: Draft) -> PlatformLock | str:
        tried.append(dict(trial.as_of_packages))
        return results.pop(0)

    narrowed = narrow(draft(), WIDENED, start=START, widened=LATER, failure=UV_SAID,
                      attempt=attempt, view=tight)
    assert narrowed is not None
    assert tried == [{"tensorboard": "2019-02-26", "tensorflow": "2019-02-27"},
                     {"tensorboard": "2019-10-03", "tensorflow": "2019-02-27"}]


@pytest.mark.network
def test_the_index_says_the_first_release_that_installs_after_a_day() -> None:
    """PyPI: the first TensorFlow below 2 with a wheel for Python 3.7 on Linux is 1.13.1
    (2019-02-26), whose metadata asks for tensorboard 1.13."""
    from envforge.resolve.pypi_index import index_files

    seen = index_view(lambda index, name: index_files(index, name), "https://pypi.org/simple",
                      "3.7.16", "linux-64")
    first = seen.first(Requirement("tensorflow<2"), START)
    assert first is not None and first[0] == date(2019, 2, 26)
    assert first[1] is not None and "tensorboard (<1.14.0,>=1.13.0)" in first[1]
    assert seen.first(Requirement("tensorflow<1"), START) is None
    # a day's wheels: Python 3.7's release day had SciPy only as an sdist for it
    assert not seen.wheel_by(Requirement("scipy"), date(2018, 6, 27))
    assert seen.wheel_by(Requirement("scipy"), date(2018, 7, 3))
    assert not seen.wheel_by(Requirement("scipy<1.1"), date(2018, 7, 3))


def test_a_day_that_ran_out_of_time_narrows_from_what_it_has_only_as_sdists() -> None:
    """lisa-lab/DeepLearningTutorials: Python 3.7's release day ran out of its share of
    init's time (the resolver built that day's sdists for their metadata: no NumPy, SciPy or
    Pillow wheel for 3.7 yet) and the day was widened six months for every package. The
    failure names nothing; the packages the widened lock takes as wheels that the day has
    none of take a later day (exact pins and sdists alike exempt), the rest keep it."""
    widened = lock(wheel("numpy", "1.15.4"), wheel("scipy", "1.2.0"), wheel("six", "1.12.0"),
                   wheel("lasagne", "0.1", "sdist"), wheel("keras", "2.2.4"))
    asked: list[str] = []

    def wheel_by(requirement: Requirement, day: date) -> bool:
        asked.append(requirement.name)
        assert day == START
        return requirement.name in ("six", "keras")

    index = IndexView(released=lambda name, _v: None, fits=lambda _r, _d: True,
                      requires=lambda _file: None, markers={}, wheel_by=wheel_by)
    tried: list[dict[str, str]] = []

    def attempt(trial: Draft) -> PlatformLock | str:
        tried.append(dict(trial.as_of_packages))
        return widened

    timed_out = "no answer as of 2018-10-03 within 24 s, its share of --timeout"
    narrowed = narrow(draft(), widened, start=START, widened=LATER, failure=timed_out,
                      attempt=attempt, view=index, slow=True)
    assert narrowed is not None
    assert tried == [{"numpy": LATER.isoformat(), "scipy": LATER.isoformat()}]
    assert sorted(asked) == ["numpy", "scipy", "six"]  # keras: an exact pin, exempt
    assert narrow(draft(), widened, start=START, widened=LATER, failure=timed_out,
                  attempt=attempt, view=index) is None  # a conflict's words name nothing


def test_a_dependency_given_a_day_too_early_for_what_needs_it_moves_on() -> None:
    """tensorflow-wavenet: tensorflow-estimator, named alone, got the day after its first
    release (1.10.6, 2018-09-18); TensorFlow 1.13.1's ``>=1.13.0,<1.14.0rc0`` needs its
    1.13.0 (2019-02-22): its day moves there, never back."""
    from envforge.app.packagedays import _give

    start, widened = date(2018, 6, 27), date(2019, 6, 27)
    first = {"tensorflow": (date(2019, 2, 26), ["tensorflow-estimator (>=1.13.0,<1.14.0rc0)"]),
             "tensorflow-estimator": (date(2018, 9, 18), []),
             "tensorflow-estimator<1.14.0rc0,>=1.13.0": (date(2019, 2, 22), [])}
    came = {"tensorflow-estimator": date(2018, 9, 18), "tensorflow": date(2019, 2, 26)}

    def fits(requirement: Requirement, day: date) -> bool:
        if requirement.specifier:
            return day >= date(2019, 2, 22)
        return day >= came[requirement.name]

    view = IndexView(released=lambda _n, _v: None, fits=fits, requires=lambda _f: None,
                     markers={"python_version": "3.7"},
                     first=lambda r, _day: first[f"{r.name}{r.specifier}"])
    days: dict[str, str] = {}
    _give([Requirement("tensorflow-estimator"), Requirement("tensorflow")], days, {}, set(),
          view, start, widened)
    assert days == {"tensorflow-estimator": "2019-02-23", "tensorflow": "2019-02-27"}
    days = {"tensorflow-estimator": "2019-05-01"}  # a later day stays
    _give([Requirement("tensorflow")], days, {}, set(), view, start, widened)
    assert days == {"tensorflow-estimator": "2019-05-01", "tensorflow": "2019-02-27"}


@pytest.mark.network
def test_a_release_whose_metadata_the_resolver_refuses_is_none_the_index_gives() -> None:
    """PyPI: every pandas wheel before 0.25.0 requires ``pytz (>=2011k)``, which uv refuses
    ([[metadata_refused]]): on Python 3.6 the first pandas after 2017-03-01 that installs is
    0.25.0 (2019-07-19), where the file list alone said 0.20.1 (2017-05-05)."""
    from envforge.resolve.pypi_index import index_files

    seen = index_view(lambda index, name: index_files(index, name), "https://pypi.org/simple",
                      "3.6.15", "linux-64")
    first = seen.first(Requirement("pandas"), date(2017, 3, 1))
    assert first is not None and first[0] == date(2019, 7, 19)
    assert not seen.fits(Requirement("pandas"), date(2019, 7, 1))


def test_a_package_the_widened_lock_took_later_than_the_widened_day_keeps_that_day() -> None:
    """Newmu-era pandas: the widened day (2018-03-01) resolved only with pandas given its own
    later day (0.25.0, 2019-07-19): narrowing gives it the day after that release, not the
    widened day, where every earlier release is refused."""
    from envforge.app.packagedays import _day

    firsts = {"pandas": (date(2019, 7, 19), ["numpy (>=1.13.3)"])}
    index = IndexView(released=lambda name, version: {"0.25.0": date(2019, 7, 19)}.get(version),
                      fits=lambda _r, _d: False, requires=lambda _f: None, markers={},
                      first=lambda requirement, _after: firsts.get(requirement.name))
    files = {"pandas": wheel("pandas", "0.25.0")}
    day, needs = _day(Requirement("pandas"), "pandas", files, index, date(2017, 3, 1),
                      date(2018, 3, 1))
    assert (day, needs) == ("2019-07-20", ["numpy (>=1.13.3)"])
    assert _day(Requirement("pandas"), "pandas", {}, index, date(2017, 3, 1),
                date(2018, 3, 1))[0] == "2018-03-01"  # no later release taken: the widened

"""Picking the one file a target installs, and real resolution against PyPI with uv."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.errors import ResolveError
from envforge.resolve.pypi import pick_files, resolve_pypi, target_tags

THEANO_SDIST_SHA = "bb566fa62f7923351299dfcb8947e42523057df65e81be444eb8ef0c6e602bf4"


def _wheel(name: str) -> dict[str, object]:
    return {"url": f"https://files.example/{name}", "hashes": {"sha256": "a" * 64}}


def test_target_tags_rank_like_pip() -> None:
    tags = [str(t) for t in target_tags("linux-64", "3.7")]
    assert tags.index("cp37-cp37m-manylinux2010_x86_64") < tags.index(
        "cp37-cp37m-manylinux1_x86_64")
    assert "cp37-cp37m-win_amd64" not in tags
    assert "cp311-cp311-win_amd64" in [str(t) for t in target_tags("win-64", "3.11")]


def test_pick_best_wheel_else_sdist() -> None:
    doc = {"packages": [
        {"name": "numpy", "version": "1.19.5", "wheels": [
            _wheel("numpy-1.19.5-cp37-cp37m-manylinux1_x86_64.whl"),
            _wheel("numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl"),
            _wheel("numpy-1.19.5-cp37-cp37m-win_amd64.whl")],
         "sdist": _wheel("numpy-1.19.5.zip")},
        {"name": "theano-pymc", "version": "1.0.5", "sdist": _wheel("Theano-PyMC-1.0.5.tar.gz")},
    ]}
    linux = pick_files(doc, platform="linux-64", python="3.7")
    assert [f.filename for f in linux] == ["numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl",
                                           "Theano-PyMC-1.0.5.tar.gz"]
    assert [f.kind for f in linux] == ["wheel", "sdist"]
    win = pick_files(doc, platform="win-64", python="3.7")
    assert win[0].filename == "numpy-1.19.5-cp37-cp37m-win_amd64.whl"


def test_no_file_for_target_is_an_error() -> None:
    wheel = _wheel("x-1-cp39-cp39-win_amd64.whl")
    doc = {"packages": [{"name": "x", "version": "1", "wheels": [wheel]}]}
    with pytest.raises(ResolveError, match="no file for linux-64"):
        pick_files(doc, platform="linux-64", python="3.7")


@pytest.mark.network
@pytest.mark.parametrize("platform,suffix", [("linux-64", "manylinux2010_x86_64.whl"),
                                             ("win-64", "win_amd64.whl")])
def test_real_pypi_resolution_for_each_platform(platform: str, suffix: str) -> None:
    files = {f.name: f for f in resolve_pypi(
        ["numpy==1.19.5", "Theano-PyMC==1.0.5"], platform=platform,  # type: ignore[arg-type]
        python="3.7", index="https://pypi.org/simple")}
    numpy = files["numpy"]
    assert numpy.version == "1.19.5" and numpy.filename.endswith("cp37-cp37m-" + suffix)
    assert numpy.url.startswith("https://files.pythonhosted.org/")
    theano = files["theano-pymc"]
    assert (theano.kind, theano.sha256) == ("sdist", THEANO_SDIST_SHA)
    assert "six" in files and "scipy" in files  # Theano's own requirements came along


def test_no_binary_takes_the_sdist_and_only_binary_refuses_one() -> None:
    from envforge.resolve.pypi import BuildControls

    doc = {"packages": [{"name": "numpy", "version": "1.19.5", "wheels": [
        _wheel("numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl")],
        "sdist": _wheel("numpy-1.19.5.zip")},
        {"name": "theano-pymc", "version": "1.0.5", "sdist": _wheel("Theano-PyMC-1.0.5.tar.gz")}]}
    [numpy, _] = pick_files(doc, platform="linux-64", python="3.7",
                            controls=BuildControls(no_binary=("NumPy",)))
    assert (numpy.kind, numpy.filename) == ("sdist", "numpy-1.19.5.zip")
    with pytest.raises(ResolveError, match=r"theano-pymc 1\.0\.5 has no wheel.*only_binary"):
        pick_files(doc, platform="linux-64", python="3.7",
                   controls=BuildControls(only_binary=(":all:",)))


def test_controls_become_uv_options(tmp_path: Path) -> None:
    from envforge.resolve.pypi import BuildControls

    args = BuildControls(constraints=("numpy<1.20",), build_constraints=("Cython==0.29.14",),
                         no_binary=("gensim",)).uv_args(tmp_path)
    assert args == ["--constraint", str(tmp_path / "constraint.txt"), "--build-constraints",
                    str(tmp_path / "build-constraints.txt"), "--no-binary", "gensim"]
    assert (tmp_path / "build-constraints.txt").read_text() == "Cython==0.29.14\n"


@pytest.mark.network
def test_constraints_and_overrides_shape_a_real_resolution() -> None:
    from envforge.resolve.pypi import BuildControls

    files = {f.name: f.version for f in resolve_pypi(
        ["python-dateutil==2.8.2", "h5py"], platform="linux-64", python="3.7.16",
        index="https://pypi.org/simple",
        controls=BuildControls(constraints=("numpy<1.20",), overrides=("six==1.15.0",)))}
    # numpy is only h5py's dependency: the constraint limits it without naming it a package
    assert files["numpy"].startswith("1.19.") and files["six"] == "1.15.0"


def test_preferences_become_a_pylock_uv_reads_as_its_output() -> None:
    import tomllib

    from envforge.lockfile import LockedPypiFile
    from envforge.resolve.pypi import preference_pylock

    sha = "a" * 64
    idna = LockedPypiFile(name="idna", version="3.3", kind="wheel",
                          filename="idna-3.3-py3-none-any.whl",
                          url="https://files.pythonhosted.org/idna-3.3-py3-none-any.whl",
                          sha256=sha)
    lasagne = LockedPypiFile(name="lasagne", version="0.2.dev1", kind="sdist",
                             filename="lasagne-0.2.dev1.tar.gz", url="git+file:///r@" + "b" * 40,
                             sha256=sha, origin="git", commit="b" * 40)
    theano = LockedPypiFile(name="theano-pymc", version="1.0.5", kind="sdist",
                            filename="Theano-PyMC-1.0.5.tar.gz",
                            url="https://files.pythonhosted.org/Theano-PyMC-1.0.5.tar.gz",
                            sha256=sha)
    doc = tomllib.loads(preference_pylock([idna, lasagne, theano]))
    assert doc["lock-version"] == "1.0"
    assert doc["packages"] == [
        {"name": "idna", "version": "3.3", "wheels": [{"url": idna.url,
                                                        "hashes": {"sha256": sha}}]},
        {"name": "theano-pymc", "version": "1.0.5", "sdist": {"url": theano.url,
                                                               "hashes": {"sha256": sha}}}]
    assert preference_pylock([lasagne]) == "" and preference_pylock([]) == ""


@pytest.mark.network
def test_a_real_resolution_keeps_preferred_versions_the_requirements_allow() -> None:
    """requests 2.27.1 takes any idna 2.5-3.x: uv alone picks the newest, with the previous
    lock's 3.3 preferred it keeps 3.3; a pin that excludes the preference wins over it."""
    index = "https://pypi.org/simple"
    old = resolve_pypi(["requests==2.27.1", "idna==3.3", "urllib3==1.26.8"],
                       platform="linux-64", python="3.7.16", index=index)
    fresh = {f.name: f.version for f in resolve_pypi(
        ["requests==2.27.1"], platform="linux-64", python="3.7.16", index=index)}
    kept = {f.name: f.version for f in resolve_pypi(
        ["requests==2.27.1"], platform="linux-64", python="3.7.16", index=index,
        preferences=old)}
    assert fresh["idna"] != "3.3" and fresh["urllib3"] != "1.26.8"
    assert (kept["idna"], kept["urllib3"]) == ("3.3", "1.26.8")
    moved = {f.name: f.version for f in resolve_pypi(
        ["requests==2.27.1", "idna==3.2"], platform="linux-64", python="3.7.16", index=index,
        preferences=old)}
    assert (moved["idna"], moved["urllib3"]) == ("3.2", "1.26.8")


# uv 0.13.9's words under pycocotools 2.0.0's failed metadata build (pycocotools==2.0.0 for
# Python 3.7, as of 2019-08-01), cut to the lines read
UV_UNDECLARED = """\
  × Failed to build `pycocotools==2.0.0`
             ModuleNotFoundError: No module named 'Cython'

hint: This error likely indicates that `pycocotools@2.0.0` depends on `Cython`, but doesn't \
declare it as a build dependency. If `pycocotools` is a first-party package, consider adding \
`Cython` to its `build-system.requires`. Otherwise, either add it to your `pyproject.toml` under:
"""


def test_uvs_hint_names_the_sdist_and_what_its_build_imports_undeclared() -> None:
    from envforge.resolve.pypi import undeclared_build

    assert undeclared_build(UV_UNDECLARED) == ("pycocotools", "2.0.0", "Cython")
    assert undeclared_build("  × Failed to build `toolz==0.8.0`\n  SyntaxError") is None


def test_a_build_log_without_uvs_hint_still_names_what_the_build_could_not_import() -> None:
    """lap 0.4.0's setup.py refuses in its own words (its line 219); Python's words name a
    dotted module; a setup.py importing its own package names nothing to install."""
    from envforge.resolve.pypi import undeclared_build, undeclared_import

    lap = ("  × Failed to build `lap==0.4.0`\n"
           '      ImportError: lap requires numpy, please "pip install numpy".\n')
    assert undeclared_build(lap) == ("lap", "0.4.0", "numpy")
    assert undeclared_import("ModuleNotFoundError: No module named 'distutils.msvccompiler'",
                             "lap") == "distutils.msvccompiler"
    assert undeclared_import("ImportError: No module named lap.version", "lap") is None


@pytest.mark.network
def test_a_build_that_imports_undeclared_fails_naming_it_and_resolves_given_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real uv: without what setup.py imports, UndeclaredBuildError names it; given it
    (uv's extra-build-dependencies, in the config file envforge writes), it resolves. A home
    of its own: metadata kept from another test's build would spare uv the build."""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    from datetime import date

    from envforge.host.interpreters import find_interpreter
    from envforge.resolve.pypi import BuildControls, UndeclaredBuildError

    builder = find_interpreter("3.7")  # uv builds metadata with the target's Python, as lock
    args = {"platform": "linux-64", "python": builder.version, "as_of": date(2019, 8, 1),
            "index": "https://pypi.org/simple", "interpreter": str(builder.executable)}
    with pytest.raises(UndeclaredBuildError) as failed:
        resolve_pypi(["pycocotools==2.0.0", "numpy==1.16.4"], **args)  # type: ignore[arg-type]
    assert (failed.value.project, failed.value.version) == ("pycocotools", "2.0.0")
    given = BuildControls(extra_build=(("pycocotools", ("Cython", "numpy")),))
    files = resolve_pypi(["pycocotools==2.0.0", "numpy==1.16.4"], controls=given,
                         **args)  # type: ignore[arg-type]
    assert {(f.name, f.version, f.kind) for f in files} == {
        ("pycocotools", "2.0.0", "sdist"), ("numpy", "1.16.4", "wheel")}

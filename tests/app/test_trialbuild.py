"""init builds what resolves only as an sdist, as apply will: a requirement whose sdist does
not build is left out with the build's own reason and the code that imports it; one that
builds is built once, into the cache apply reads (a later ``apply --offline`` finds it).

Real sdists, real builds, no network: each fixture project is an sdist with an in-tree build
backend (``backend-path``, no build requirements to download), served from a local PEP 503
index over HTTP. uv reads its metadata without building it (``prepare_metadata_for_build_
wheel``), as it read pydensecrf 1.0rc3's; only its ``build_wheel`` fails.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envforge.app.settling import _trial, try_lock
from envforge.app.trialbuild import BUILD_MIN_S, Trial, build_reason, trial_builds
from envforge.bundle.wheels import BuildFailedError
from envforge.cli import main
from envforge.errors import StepError
from envforge.lockfile import PlatformLock, load_lock
from envforge.paths import envforge_dirs
from tests.testing.localindex import add_project, served, write_tar
from tests.testing.packs import REGISTRY
from tests.testing.specs import venv_spec_text

BACKEND = '''\
"""A build backend in the sdist itself: metadata always, a wheel unless FAIL."""
import base64, hashlib, os, sys, zipfile

import time

NAME, VERSION, FAIL, SLEEP = {name!r}, "1.0", {fail!r}, {sleep!r}
DIST = NAME.replace("-", "_") + "-" + VERSION
META = "Metadata-Version: 2.1\\nName: " + NAME + "\\nVersion: " + VERSION + "\\n"


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    os.makedirs(os.path.join(directory, DIST + ".dist-info"))
    with open(os.path.join(directory, DIST + ".dist-info", "METADATA"), "w") as f:
        f.write(META)
    return DIST + ".dist-info"


def build_wheel(directory, config_settings=None, metadata_directory=None):
    time.sleep(SLEEP)
    if FAIL:
        sys.stderr.write("gcc -c fast.c -o fast.o\\n" + FAIL + "\\n1 error generated.\\n")
        raise SystemExit(1)
    files = {{NAME.replace("-", "_") + ".py": "X = 1\\n",
             DIST + ".dist-info/METADATA": META,
             DIST + ".dist-info/WHEEL": "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\n"
                                        "Tag: py3-none-any\\n"}}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        record.append(path + ",sha256=" + digest.decode().rstrip("=") + "," + str(len(text)))
    files[DIST + ".dist-info/RECORD"] = "\\n".join(record + [DIST + ".dist-info/RECORD,,"])
    wheel = DIST + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel
'''

COMPILER_ERROR = ("src/fast.c:3:10: error: 'PyThreadState' {aka 'struct _ts'} has no member "
                  "named 'exc_type'")


def _sdist(folder: Path, name: str, fail: str | None, sleep: float = 0) -> Path:
    """``name``-1.0.tar.gz whose in-tree backend fails with ``fail`` on stderr (None: builds)
    after ``sleep`` seconds."""
    top = f"{name.replace('-', '_')}-1.0"
    files = {"pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                               'backend-path = ["."]\n',
             "backend.py": BACKEND.format(name=name, fail=fail, sleep=sleep),
             "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"}
    return write_tar(folder / f"{top}.tar.gz", top, files)


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A PEP 503 index on 127.0.0.1 with three sdists: one whose build fails as a compiler
    does, one that builds, one that builds in a minute; and a home of the test's own (its
    build cache starts empty)."""
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    root = tmp_path / "index"
    (root / "files").mkdir(parents=True)
    for name, fail, sleep in (("envforge-nobuild-fixture", COMPILER_ERROR, 0),
                              ("envforge-builds-fixture", None, 0),
                              ("envforge-slow-fixture", None, 60)):
        add_project(root, name, _sdist(root / "files", name, fail, sleep))
    with served(root) as url:
        yield url


def _project(tmp_path: Path, index: str, *requirements: str) -> Path:
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "requirements.txt").write_text(f"--index-url {index}\n" + "".join(
        f"{r}\n" for r in requirements))
    (repo / "run.py").write_text("import os\nimport envforge_nobuild_fixture\n")
    return repo


@pytest.mark.posix_only("builds for linux-64, which only a Linux host builds")
def test_a_requirement_whose_sdist_does_not_build_is_left_out_with_the_compilers_words(
        tmp_path: Path, index: str, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path, index, "envforge-nobuild-fixture", "envforge-builds-fixture")
    (tmp_path / "specs").mkdir()
    out = tmp_path / "specs" / "project.toml"
    assert main(["init", str(repo), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    why = report["left_out"]["envforge-nobuild-fixture"]
    assert why.startswith("envforge-nobuild-fixture 1.0's sdist does not build for Python 3.7")
    assert why.endswith(f"{COMPILER_ERROR}; run.py:2 imports envforge_nobuild_fixture, which "
                        "will not run without it")
    assert report["built"] == {"sdists": ["envforge-builds-fixture==1.0"], "checked": True,
                               "unchecked": None}
    assert report["locks"] is True
    text = out.read_text()
    assert '    # "envforge-nobuild-fixture",  # requirements.txt:2; left out: ' in text
    assert '\n    "envforge-builds-fixture",  # requirements.txt:3\n' in text

    # the wheel built at init is the one apply finds: offline, nothing to build
    assert main(["lock", str(out), "-q"]) == 0
    plock = load_lock(tmp_path / "locks" / "project.lock", REGISTRY).platforms["linux-64"]
    assert [f.name for f in plock.pypi] == ["envforge-builds-fixture"]
    assert main(["apply", str(out), "--yes", "--offline", "-q",
                 "--prefix", str(tmp_path / "env")]) == 0
    assert "building" not in capsys.readouterr().err
    assert len(list((envforge_dirs().cache / "built").glob("*/*/built.json"))) == 1


@pytest.mark.posix_only("builds for linux-64, which only a Linux host builds")
def test_a_second_init_builds_nothing_again(tmp_path: Path, index: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path, index, "envforge-builds-fixture")
    out = tmp_path / "project.toml"
    assert main(["init", str(repo), "-o", str(out)]) == 0
    assert "building envforge-builds-fixture==1.0 from its sdist" in capsys.readouterr().err
    assert main(["init", str(repo), "-o", str(out), "--force"]) == 0
    err = capsys.readouterr().err
    assert "building" not in err.replace("built from their sdists", "")
    assert "envforge-builds-fixture==1.0" in err


def test_offline_init_says_nothing_was_built(tmp_path: Path, index: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path, index, "envforge-nobuild-fixture")
    out = tmp_path / "project.toml"
    assert main(["init", str(repo), "-o", str(out), "--offline", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["built"]["checked"] is False and "--offline" in report["built"]["unchecked"]
    assert report["left_out"] == {}


def _locked(tmp_path: Path, index: str, requirement: str) -> PlatformLock:
    text = venv_spec_text("t", f'index = "{index}"\npackages = ["{requirement}"]\n')
    locked = try_lock(text, str(tmp_path / "t.toml"), "linux-64")
    assert not isinstance(locked, str), locked
    return locked


@pytest.mark.posix_only("builds for linux-64, which only a Linux host builds")
def test_no_build_is_started_past_the_deadline_nor_for_another_platform(
        tmp_path: Path, index: str) -> None:
    locked = _locked(tmp_path, index, "envforge-builds-fixture")
    late = trial_builds(locked, "linux-64", deadline=time.monotonic() + BUILD_MIN_S / 2)
    assert late == Trial(unchecked="init's time bound ran out before building "
                                   "envforge-builds-fixture==1.0 from source; give more with "
                                   "--timeout")
    elsewhere = trial_builds(locked, "win-64", deadline=None)
    assert elsewhere.built == () and "only a win-64 host can try" in str(elsewhere.unchecked)
    assert not (envforge_dirs().cache / "built").exists()


@pytest.mark.posix_only(reason="ends the build's processes through /proc")
def test_a_build_the_deadline_cuts_is_said_as_not_checked(
        tmp_path: Path, index: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from envforge.app import trialbuild

    locked = _locked(tmp_path, index, "envforge-slow-fixture")
    monkeypatch.setattr(trialbuild, "BUILD_MIN_S", 0.0)  # started with 3 s left: cut
    begun = time.monotonic()
    trial = _trial(locked, "linux-64", time.monotonic() + 3, lambda _: None)
    assert time.monotonic() - begun < 15
    assert trial == Trial(unchecked="init's time bound ran out while building "
                                    "envforge-slow-fixture==1.0 from source; give more with "
                                    "--timeout")


def test_the_reason_is_the_first_compiler_error_else_the_scripts_exception() -> None:
    gcc = ("running build_ext\nbuilding 'pydensecrf.eigen' extension\n"
           "pydensecrf/eigen.cpp:4518:13: warning: unused variable 'x'\n"
           "pydensecrf/eigen.cpp:4520:24: error: 'PyThreadState' has no member named "
           "'exc_type'\npydensecrf/eigen.cpp:4521:24: error: 'PyThreadState' has no member "
           "named 'exc_value'\nerror: command '/usr/bin/gcc' failed with exit code 1\n"
           "error: Failed to build `pydensecrf==1.0rc3`\n  cause: The build backend returned "
           "an error\nhint: Build failures usually indicate a problem with the package")
    assert build_reason(BuildFailedError("building failed", log=gcc)) == (
        "pydensecrf/eigen.cpp:4520:24: error: 'PyThreadState' has no member named 'exc_type'")
    cython = ("DEBUG Calling `setuptools.build_meta:__legacy__.build_wheel`\n"
              "pydensecrf/densecrf.pxd:1:0: 'eigen.pxd' not found\n"
              "Cython.Compiler.Errors.CompileError: pydensecrf/densecrf.pyx\n")
    assert build_reason(BuildFailedError("x", log=cython)) == \
        "pydensecrf/densecrf.pxd:1:0: 'eigen.pxd' not found"
    script = ('  File "setup.py", line 3, in <module>\n'
              "ModuleNotFoundError: No module named 'numpy'\n"
              "error: Failed to build `x==1`\n  cause: The build backend returned an error")
    assert build_reason(BuildFailedError("x", log=script)) == \
        "ModuleNotFoundError: No module named 'numpy'"
    assert build_reason(StepError("x.whl is not pure Python")) == "x.whl is not pure Python"

"""lockcheck: a group resolved for another Python than the environment's is refused;
kernel references read, not recomputed, by plan and apply.

Found on the GPU lock after a textual merge of two locks: its suite group had been resolved
for Python 3.11 in a Python 3.9 environment, and every file name and hash was well formed.
The real theano-cpu lock is edited as such a merge would; each edit must be refused naming
the line and key, and the untouched lock must pass.

And a pack's kernel references (NumPy's, from lock time): the check plan and apply run reads
them and needs no NumPy (a bundle's envforge has none), comparing what the spec decides of
them; ``references=True`` (verify) recomputes them and refuses an edited one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from envforge.errors import SpecError
from envforge.expectations import expect_kernel, kernel_inputs_of
from envforge.lockcheck import _inputs, check_lock
from envforge.lockfile import KernelExpectation, PlatformLock, load_lock
from envforge.spec import Frozen, load_spec
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parent.parent
TEXT = (REPO / "locks" / "theano-cpu.lock").read_text(encoding="utf-8")
SPEC = load_spec(REPO / "specs" / "theano-cpu.toml", REGISTRY)
NUMPY = "numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl"
PLATFORM = 'python = "3.7"\n\n[platforms.linux-64.apply]'


def _check(tmp_path: Path, text: str) -> None:
    path = tmp_path / "theano-cpu.lock"
    path.write_text(text, encoding="utf-8")
    check_lock(SPEC, load_lock(path, REGISTRY), path, REGISTRY)


def test_the_real_lock_passes(tmp_path: Path) -> None:
    _check(tmp_path, TEXT)


@pytest.mark.parametrize(("old", "new", "key", "says"), [
    ("[platforms.linux-64.suite]\n", '[platforms.linux-64.suite]\npython = "3.11.9"\n',
     "platforms.linux-64.suite.python", "test group was resolved for Python 3.11.9"),
    (PLATFORM, 'python = "3.7"\npypi_python = "3.11.9"\n\n[platforms.linux-64.apply]',
     "platforms.linux-64.pypi_python", "PyPI was resolved for Python 3.11.9"),
    (f'filename = "{NUMPY}"', 'filename = "numpy-1.19.5-cp311-cp311-manylinux2010_x86_64.whl"',
     "platforms.linux-64.pypi.", "cp311-cp311-manylinux2010_x86_64"),
    ('filename = "exceptiongroup-1.3.2-py3-none-any.whl"',
     'filename = "exceptiongroup-1.3.2-cp311-none-any.whl"',
     "platforms.linux-64.suite.runner.0.filename", "Python 3.7 on linux-64 cannot install"),
])
def test_a_group_for_another_python_is_refused(tmp_path: Path, old: str, new: str, key: str,
                                               says: str) -> None:
    assert old in TEXT
    text = TEXT.replace(old, new, 1)
    with pytest.raises(SpecError) as caught:
        _check(tmp_path, text)
    error = caught.value
    assert error.key is not None and error.key.startswith(key), error
    assert says in str(error)
    assert error.line is not None
    assert text.splitlines()[error.line - 1].split("=")[0].strip() in (
        key.rsplit(".", 1)[-1], "filename"), (error.line, error)


def test_a_suite_group_recorded_for_the_locked_python_passes(tmp_path: Path) -> None:
    """A lock of this envforge records the group's Python; the same Python passes."""
    _check(tmp_path, TEXT.replace(PLATFORM, 'python = "3.7"\npypi_python = "3.7.17"\n\n'
                                  '[platforms.linux-64.apply]', 1)
           .replace("[platforms.linux-64.suite]\n",
                    '[platforms.linux-64.suite]\npython = "3.7.17"\n', 1))


KERAS_SPEC = load_spec(REPO / "specs" / "keras-theano-cpu.toml", REGISTRY)
KERAS_TEXT = (REPO / "locks" / "keras-theano-cpu.lock").read_text(encoding="utf-8")
TRAIN = "[platforms.linux-64.expect.keras.train]\n"


def _check_keras(tmp_path: Path, text: str, *, references: bool) -> None:
    path = tmp_path / "keras-theano-cpu.lock"
    path.write_text(text, encoding="utf-8")
    check_lock(KERAS_SPEC, load_lock(path, REGISTRY), path, REGISTRY, references=references)


def test_plan_and_applys_check_needs_no_numpy(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundle's envforge has no NumPy (the resolve extra): the check apply runs must not
    recompute Keras's trained-model reference; with NumPy blocked it still passes."""
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` raises ImportError
    _check_keras(tmp_path, KERAS_TEXT, references=False)
    with pytest.raises(ImportError):
        _check_keras(tmp_path, KERAS_TEXT, references=True)


@pytest.mark.parametrize(("old", "new", "key"), [
    ("seed = 22\n", "seed = 23\n", "platforms.linux-64.expect.keras.train.seed"),
    ('backend = "theano"', 'backend = "tensorflow"', "platforms.linux-64.expect.keras.backend"),
])
def test_what_the_spec_decides_of_a_pack_table_is_checked_without_numpy(
        tmp_path: Path, old: str, new: str, key: str) -> None:
    start = KERAS_TEXT.index("[platforms.linux-64.expect.keras]")
    assert old in KERAS_TEXT[start:]
    text = KERAS_TEXT[:start] + KERAS_TEXT[start:].replace(old, new, 1)
    with pytest.raises(SpecError) as caught:
        _check_keras(tmp_path, text, references=False)
    assert caught.value.key == key, caught.value


def test_an_edited_reference_is_read_by_apply_and_refused_when_recomputed(
        tmp_path: Path) -> None:
    """The reference itself is NumPy's: apply reads it as locked, verify recomputes it."""
    start = KERAS_TEXT.index(TRAIN)
    text = KERAS_TEXT[:start] + KERAS_TEXT[start:].replace(
        "checksum = 14.0202473861", "checksum = 15.0", 1)
    assert text != KERAS_TEXT
    _check_keras(tmp_path, text, references=False)
    with pytest.raises(SpecError) as caught:
        _check_keras(tmp_path, text, references=True)
    assert caught.value.key == "platforms.linux-64.expect.keras.train.checksum", caught.value
    assert caught.value.line is not None
    assert text.splitlines()[caught.value.line - 1].startswith("checksum = 15.0")


def test_a_pack_tables_kernels_are_compared_by_their_inputs_alone_in_a_tuple_too() -> None:
    """A pack may hold kernels as the core does (a tuple): each is blanked, the rest kept."""
    class Table(Frozen):
        name: str
        one: KernelExpectation
        many: tuple[KernelExpectation, ...]

    kernel = expect_kernel("train", packs=REGISTRY,
                           seed=1, shape=(8, 2, 3), float_x="float32", rtol=1e-4,
                           atol=1e-6)
    blank = kernel_inputs_of(kernel, REGISTRY)
    assert blank != kernel and blank.seed == kernel.seed and blank.rtol == kernel.rtol
    table = Table(name="t", one=kernel, many=(kernel, kernel))
    assert _inputs(table, list(REGISTRY)) == Table(name="t", one=blank, many=(blank, blank))


@pytest.mark.parametrize(("line", "refused_at"), [
    ('"appnope==0.1.0; sys_platform == \\"darwin\\""', None),  # a 2015 Mac's pip freeze
    ('"pywin32==224; platform_system == \\"Windows\\""', "platforms.win-64.pypi"),
    ('"pytz==2015.4; sys_platform == \\"linux\\""', "platforms.linux-64.pypi"),
    ('"appnope==0.1.0"', "platforms.linux-64.pypi"),
])
def test_a_requirement_whose_marker_excludes_the_platform_needs_no_entry(
        tmp_path: Path, line: str, refused_at: str | None) -> None:
    """init keeps ``appnope; sys_platform == "darwin"`` (rnn-tutorial-gru-lstm's
    requirements.txt:1), and the resolver leaves it out for linux-64: apply refused the lock
    ("no entry for appnope, which the spec requires") until the marker was evaluated for
    each platform; where it holds (pywin32 on win-64), the entry is still required."""
    text = (REPO / "specs" / "theano-cpu.toml").read_text(encoding="utf-8")
    spec_path = tmp_path / "specs" / "theano-cpu.toml"
    spec_path.parent.mkdir()
    spec_path.write_text(text.replace('"six==1.16.0",', f'"six==1.16.0", {line},', 1),
                         encoding="utf-8")
    lock_path = tmp_path / "theano-cpu.lock"
    lock_path.write_text(TEXT, encoding="utf-8")
    spec = load_spec(spec_path, REGISTRY)
    if refused_at is None:
        check_lock(spec, load_lock(lock_path, REGISTRY), lock_path, REGISTRY)
        return
    with pytest.raises(SpecError, match="which the spec requires") as caught:
        check_lock(spec, load_lock(lock_path, REGISTRY), lock_path, REGISTRY)
    assert caught.value.key == refused_at


def test_a_platform_whose_derived_table_is_stale_is_not_current(tmp_path: Path) -> None:
    """A table lock derives from the spec with envforge's knowledge (Theano's flags here;
    torch's CUDA build of a wheel the knowledge learnt later, as for torch 1.1.0): a lock
    written before the knowledge changed is not current, so `envforge lock` locks that
    platform again instead of calling it unchanged and leaving apply to refuse it."""
    from envforge.lockcheck import platform_is_current

    path = tmp_path / "theano-cpu.lock"
    path.write_text(TEXT, encoding="utf-8")
    lock = load_lock(path, REGISTRY)
    assert platform_is_current(SPEC.for_platform("linux-64"), lock.platforms["linux-64"],
                               REGISTRY)
    stale = TEXT.replace('allow_gc = "True"', 'allow_gc = "False"', 1)
    assert stale != TEXT
    path.write_text(stale, encoding="utf-8")
    lock = load_lock(path, REGISTRY)
    assert not platform_is_current(SPEC.for_platform("linux-64"), lock.platforms["linux-64"],
                                   REGISTRY)
    assert platform_is_current(SPEC.for_platform("win-64"), lock.platforms["win-64"], REGISTRY)


COCO = ('[project]\nname = "c"\nplatforms = ["linux-64"]\n[python]\nversion = "3.7"\n'
        '[environment]\nkind = "venv"\n[pypi]\npackages = ["numpy==1.16.4", '
        '"pycocotools==2.0.0"]\nextra_build_dependencies = { pycocotools = ["Cython", "numpy"] }\n')


def _coco_lock(**build: Any) -> PlatformLock:
    from envforge.lockfile import Expectations, LockedPypiFile, PypiBuild

    files = (LockedPypiFile(name="numpy", version="1.16.4", kind="wheel",
                            filename="numpy-1.16.4-cp37-cp37m-manylinux1_x86_64.whl",
                            url="https://files.example/numpy.whl", sha256="1" * 64),
             LockedPypiFile(name="pycocotools", version="2.0.0", kind="sdist",
                            filename="pycocotools-2.0.0.tar.gz",
                            url="https://files.example/pycocotools.tar.gz", sha256="2" * 64))
    return PlatformLock(python="3.7.16", environment="venv", pypi=files,
                        expect=Expectations(versions={}, device="cpu", float_x="float64"),
                        build=PypiBuild(index="https://pypi.org/simple", **build))


@pytest.mark.parametrize(("build", "key", "says"), [
    ({"extra_dependencies": {"pycocotools": ("Cython==0.29.13", "numpy==1.16.4")},
      "runtime": ("numpy<=1.16.4",)}, None, None),
    ({"extra_dependencies": {"pycocotools": ("Cython==0.29.13", "numpy==1.16.4")}}, None, None),
    ({"extra_dependencies": {"pycocotools": ("Cython==0.29.13", "evil==1.0")}},
     "build.extra_dependencies.pycocotools", "but the spec gives ['Cython', 'numpy']"),
    ({"extra_dependencies": {"pycocotools": ("Cython==0.29 --index-url=x", "numpy==1.16.4")}},
     "build.extra_dependencies.pycocotools", "but the spec gives ['Cython', 'numpy']"),
    ({"extra_dependencies": {"pycocotools": ("Cython==0.29.13", "numpy==1.21.6")}},
     "build.extra_dependencies.pycocotools", "numpy==1.21.6 but the environment has numpy"),
    ({"extra_dependencies": {"pycocotools": ("Cython==0.29.13", "numpy==1.16.4"),
                             "six": ("evil==1.0",)}},
     "build.extra_dependencies", "projects ['pycocotools', 'six'] but the spec gives"),
    ({}, "build.extra_dependencies", "projects [] but the spec gives ['pycocotools']"),
    ({"extra_dependencies": {"pycocotools": ("Cython==0.29.13", "numpy==1.16.4")},
      "runtime": ("numpy<=1.21.6",)}, "build.runtime", "the environment's locked releases"),
])
def test_a_builds_extra_pins_and_runtime_are_the_specs_and_the_environments(
        build: dict[str, object], key: str | None, says: str | None) -> None:
    """A pin edited into the lock's build table would put into an sdist's build what the
    spec never named, or build an extension against a NumPy the environment does not have;
    a lock of before the runtime key (none) passes."""
    from envforge.lockcheck import _check_build
    from envforge.spec import parse_spec

    pspec = parse_spec(COCO, source="c.toml", registry=REGISTRY).for_platform("linux-64")

    def fail(path: Iterable[str | int], message: str) -> SpecError:
        return SpecError("c.lock", message, key=".".join(map(str, path)))

    if key is None:
        _check_build(pspec, _coco_lock(**build), ("platforms", "linux-64"), fail)
        return
    with pytest.raises(SpecError) as caught:
        _check_build(pspec, _coco_lock(**build), ("platforms", "linux-64"), fail)
    assert caught.value.key == f"platforms.linux-64.{key}"
    assert says in str(caught.value)


SETUPTOOLS = TEXT[TEXT.index("[[platforms.linux-64.pypi]]\nfilename = \"setuptools-"):]
SETUPTOOLS = SETUPTOOLS[:SETUPTOOLS.index("[[platforms.linux-64.pypi]]", 1)]


@pytest.mark.parametrize("edit", [
    lambda text: text.replace(SETUPTOOLS, "", 1),
    lambda text: text.replace(SETUPTOOLS, SETUPTOOLS.replace("68.0.0", "80.9.0"), 1),
])
def test_a_lock_without_what_the_knowledge_adds_is_refused_and_not_current(
        tmp_path: Path, edit: Any) -> None:
    """Theano-PyMC 1.0.5 imports pkg_resources undeclared (theano.toml's ``[[undeclared]]``):
    a lock without setuptools, or with one that no longer ships pkg_resources, is one written
    before the knowledge knew it (torch 1.10's row came after huggingface/torchMoji had been
    locked, and `envforge lock` called its lock unchanged): apply refuses it naming the row,
    and lock locks the platform again."""
    from envforge.lockcheck import platform_is_current

    assert SETUPTOOLS.count("[[platforms.linux-64.pypi]]") == 1 and "68.0.0" in SETUPTOOLS
    stale = edit(TEXT)
    with pytest.raises(SpecError) as refused:
        _check(tmp_path, stale)
    assert refused.value.key == "platforms.linux-64.pypi"
    assert "no entry meeting setuptools<80.9: theano/gpuarray/linalg.py:3 imports " \
           "pkg_resources, which its metadata does not require so" in str(refused.value)
    lock = load_lock(tmp_path / "theano-cpu.lock", REGISTRY)
    assert not platform_is_current(SPEC.for_platform("linux-64"), lock.platforms["linux-64"],
                                   REGISTRY)
    assert platform_is_current(SPEC.for_platform("win-64"), lock.platforms["win-64"], REGISTRY)

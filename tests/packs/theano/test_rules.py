"""Per-release Theano-PyMC rules: spelling, flags, removed flags, cuDNN, NumPy, Python."""

from __future__ import annotations

import pytest

from envforge.errors import InputError
from envforge.knowledge import UnknownFactError
from envforge.packs.theano.knowledge import (
    blog_errata,
    erratum_for_flag,
    map_legacy_theano,
    theano_distribution,
    theano_rules,
)


@pytest.mark.parametrize(("version", "spelling"), [
    ("1.0.5", "dots"), ("1.0.11", "dots"), ("1.0.12", "double-underscores"),
    ("1.1.2", "double-underscores"),
])
def test_spelling_changes_at_1_0_12(version: str, spelling: str) -> None:
    assert theano_rules(version).spelling == spelling


def test_unknown_release_is_an_input_error() -> None:
    with pytest.raises(UnknownFactError, match=r"0\.9\.0"):
        theano_rules("0.9.0")
    assert issubclass(UnknownFactError, InputError)


def test_spell_and_canonical() -> None:
    old, new = theano_rules("1.0.5"), theano_rules("1.1.2")
    assert old.spell("blas.ldflags") == "blas.ldflags"
    assert new.spell("blas.ldflags") == "blas__ldflags"
    assert new.canonical("gpuarray__preallocate") == "gpuarray.preallocate"
    assert old.canonical("gpuarray__preallocate") == "gpuarray__preallocate"


def test_theanorc_sections_of_nested_flags_follow_the_spelling() -> None:
    assert theano_rules("1.0.5").theanorc_location("dnn.conv.algo_fwd") == ("dnn.conv", "algo_fwd")
    assert theano_rules("1.1.2").theanorc_location("dnn.conv.algo_fwd") == \
        ("dnn__conv", "algo_fwd")
    assert theano_rules("1.1.2").theanorc_location("floatX") == ("global", "floatX")


def test_known_flags_differ_between_releases() -> None:
    old, new = theano_rules("1.0.5"), theano_rules("1.1.2")
    assert "numpy.seterr_all" in old.known_flags and "numpy.seterr_all" not in new.known_flags
    assert "blas.ldflags" in new.known_flags
    assert "lib.cnmem" not in old.known_flags


@pytest.mark.parametrize(("name", "replacement"), [
    ("lib.cnmem", "gpuarray.preallocate"), ("nvcc.fastmath", None), ("nvcc.flags", None),
    ("cuda.enabled", "device"), ("pycuda.init", None),
])
def test_removed_flags(name: str, replacement: str | None) -> None:
    row = theano_rules("1.0.5").removed_flag(name)
    assert row is not None and row.replacement == replacement
    assert "1.0.0" in row.source


def test_live_flags_are_not_removed() -> None:
    rules = theano_rules("1.0.5")
    assert rules.removed_flag("cuda.root") is None
    assert rules.removed_flag("nvcc") is None


@pytest.mark.parametrize(("name", "value", "ok"), [
    ("dnn.enabled", "True", True), ("dnn.enabled", "no_check", True),
    ("dnn.enabled", "true", False), ("device", "cuda0", True), ("device", "opencl0:0", True),
    ("device", "cpu", True), ("device", "gpu", False), ("device", "tpu", False),
    ("allow_gc", "false", True), ("allow_gc", "yes", False),
    ("gpuarray.preallocate", "0.8", True), ("gpuarray.preallocate", "80%", False),
    ("floatX", "float16", True), ("floatX", "float128", False), ("mode", "JAX", False),
    ("blas.ldflags", "-lopenblas", True),
])
def test_flag_values_as_theano_1_0_5_takes_them(name: str, value: str, ok: bool) -> None:
    problem = theano_rules("1.0.5").flags[name].problem(value)
    assert (problem is None) is ok, problem


def test_device_gpu_names_the_old_back_end() -> None:
    problem = theano_rules("1.0.5").flags["device"].problem("gpu0")
    assert problem is not None and "old GPU back-end" in problem


def test_mode_jax_from_1_1_2() -> None:
    assert theano_rules("1.1.2").flags["mode"].problem("JAX") is None


def test_cudnn_rules() -> None:
    rules = {row.kind: row for row in theano_rules("1.0.5").cudnn}
    assert rules["rejected-below"].version_code == 5000
    assert rules["warns-from"].version_code == 7200
    assert rules["conv-fails-from"].version_code == 8000
    assert "seen here" in rules["conv-fails-from"].source
    later = {row.kind: row for row in theano_rules("1.1.2").cudnn}
    assert "*inferred*" in later["conv-fails-from"].source


def test_numpy_python_pygpu_and_requirements_for_1_0_5() -> None:
    rules = theano_rules("1.0.5")
    statuses = {(row.numpy, row.status) for row in rules.numpy}
    assert {(">=1.22", "needs-flag"), (">=1.24", "breaks"), ("==1.19.5", "works")} <= statuses
    assert [row.flag for row in rules.numpy if row.status == "needs-flag"] == ["blas.ldflags"]
    assert any(row.python == ">=3.12" and row.status == "breaks" for row in rules.python)
    assert rules.pygpu[0].pygpu == ">=0.7,<0.8" and rules.pygpu[0].api_version_major == 2
    assert rules.requires[0].packages == ("numpy>=1.9.1", "scipy>=0.14", "six>=1.9.0")
    assert rules.classifiers[0].python == ("3.6", "3.7", "3.8", "3.9")
    assert rules.cudnn_names[0].names == ("cudnn64_7.dll", "cudnn64_6.dll", "cudnn64_5.dll")


def test_requirements_of_1_1_2_come_from_its_sdist() -> None:
    (row,) = theano_rules("1.1.2").requires
    assert "filelock" in row.packages


def test_blog_errata() -> None:
    wrong = {row.wrong: row.correct for row in blog_errata()}
    assert wrong["[lib] cnmem = 0.8"] == "[gpuarray] preallocate = 0.8"
    assert wrong["[cudnn] enable = True"] == "[dnn] enabled = True"
    assert wrong["device = gpu"].startswith("device = cuda")
    assert wrong["[global] compiler = g++"] == "[global] cxx = g++"
    assert "init_dev" in wrong["from theano.gpuarray import init_devices"]
    assert "conda" in wrong["pip install pygpu"]
    assert len(wrong) == 9
    erratum = erratum_for_flag("cudnn.enable")
    assert erratum is not None and erratum.replacement == "dnn.enabled"
    compiler = erratum_for_flag("compiler")
    assert compiler is not None and compiler.replacement == "cxx"
    assert "compiler" not in theano_rules("1.0.5").known_flags
    assert "cxx" in theano_rules("1.0.5").known_flags


def test_config_reading_facts_are_available_per_release() -> None:
    ids = {row.id for row in theano_rules("1.0.5").config_reading}
    assert {"precedence", "theanorc-win32", "theanorc-cwd", "theano-flags-syntax"} <= ids


@pytest.mark.parametrize(("value", "problem"), [
    ("32", False), ("64", False), ("16", False), ("float32", False), ("8", True),
    ("Float32", True)])
def test_floatx_takes_the_short_forms(value: str, problem: bool) -> None:
    """floatX_convert ([TP] configdefaults.py:37) turns "32" into float32 before checking."""
    schema = theano_rules("1.0.5").flags["floatX"]
    assert (schema.problem(value) is not None) is problem


@pytest.mark.parametrize(("value", "mib"), [
    (-1.0, 0.0), (0.0, 0.0), (0.5, 4000.0), (0.99, 7600.0), (1.0, 7600.0), (1.5, 1.5),
    (2048.0, 2048.0)])
def test_preallocate_one_is_a_fraction(value: float, mib: float) -> None:
    """`if preallocate <= 1` ([TP] gpuarray/__init__.py:156): exactly 1 is 95 % of memory."""
    (row,) = theano_rules("1.0.5").preallocate
    assert row.megabytes(value, 8000.0) == pytest.approx(mib)


def test_win32_path_rewrite_is_a_fact() -> None:
    rows = {row.id: row for row in theano_rules("1.0.5").config_reading}
    row = rows["win32-dnn-rewrites-path"]
    assert "sorted" in row.fact and "lower-cased" in row.fact
    assert "dnn.py:94" in row.source and "pathparse.py" in row.source


def test_original_theano_is_known_and_maps_to_theano_pymc() -> None:
    original = theano_distribution("theano")
    assert original is not None and original.name == "Theano"
    assert {"0.8.2", "1.0.5"} <= set(original.releases)
    assert original.installs == theano_distribution("Theano_PyMC").installs == "theano"  # type: ignore[union-attr]
    assert theano_distribution("numpy") is None


@pytest.mark.parametrize(("legacy", "mapped"), [
    ("theano>=0.8.2", "Theano-PyMC==1.0.5"), ("Theano==0.8.2", "Theano-PyMC==1.0.5"),
    ("theano", "Theano-PyMC==1.0.5"),
    ('theano>=0.8; python_version < "3.8"', 'Theano-PyMC==1.0.5; python_version < "3.8"'),
    ("Theano-PyMC==1.0.5", "Theano-PyMC==1.0.5"), ("numpy==1.19.5", "numpy==1.19.5"),
])
def test_legacy_theano_requirement_maps_to_what_works(legacy: str, mapped: str) -> None:
    assert map_legacy_theano(legacy) == mapped


def test_unparsable_requirement_is_input_error() -> None:
    with pytest.raises(InputError, match="not a requirement"):
        map_legacy_theano("theano >>= 1")


def test_unknown_release_says_what_to_pin() -> None:
    with pytest.raises(UnknownFactError, match=r"fix: pin Theano-PyMC==1\.0\.5"):
        theano_rules("0.8.2")

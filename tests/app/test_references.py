"""The kernels' references from envforge's cache: the same as computed, and computed again
when the entry is damaged or the inputs differ; a lock's child process writes the same entry."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from envforge.app.references import BackgroundReferences, CancelledError, kernel_references
from envforge.expectations import kernel_expectations
from envforge.spec import VerifySection
from tests.testing.packs import REGISTRY

VERIFY = VerifySection(kernels=("elementwise", "gemm", "random"), elementwise_size=300,
                       gemm_size=16)


def test_an_entry_gives_what_was_computed_and_a_damaged_one_is_computed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path))
    computed = kernel_expectations(VERIFY, "float64", REGISTRY)
    assert kernel_references(VERIFY, "float64", REGISTRY) == computed  # computed, then written
    [entry] = (tmp_path / "cache" / "kernels").iterdir()
    assert kernel_references(VERIFY, "float64", REGISTRY) == computed  # read back
    entry.write_text('[{"name": "gemm"}]')
    assert kernel_references(VERIFY, "float64", REGISTRY) == computed
    assert kernel_references(VERIFY, "float32",
                             REGISTRY) == kernel_expectations(VERIFY, "float32", REGISTRY)
    assert len(list(entry.parent.iterdir())) == 2


def test_an_entry_is_keyed_by_the_code_of_each_kernel_it_holds() -> None:
    """Theano's random kernel is computed by its pack's mrg.py: an edit there is a new entry,
    as is one in any module of the core's (the expectation's summary is not the reference's
    module)."""
    import envforge.expectations
    from envforge.app.references import _sources

    sources = _sources(VERIFY, REGISTRY)
    core = Path(envforge.expectations.__file__).parent
    assert set(core.glob("*.py")) <= {path.resolve() for path in sources}
    assert {"kernels.py", "mrg.py"} <= {path.name for path in sources}
    assert "mrg.py" not in {path.name for path in _sources(VerifySection(), REGISTRY)}


def test_a_child_process_writes_the_entry_and_a_cancelled_get_raises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path))
    references = BackgroundReferences()
    references.start(VERIFY, "float64", list(REGISTRY))
    folder = tmp_path / "cache" / "kernels"
    deadline = time.monotonic() + 120
    while not (folder.is_dir() and any(folder.glob("*.json"))):
        assert time.monotonic() < deadline, "the child wrote no entry"
        time.sleep(0.05)
    assert references.get(VERIFY, "float64", REGISTRY) == kernel_expectations(VERIFY, "float64",
                                                                             REGISTRY)
    references.cancel()
    with pytest.raises(CancelledError):
        references.get(VERIFY, "float64", REGISTRY)


def test_the_child_computes_with_one_blas_thread_unless_told_otherwise() -> None:
    """The child runs beside uv's resolvers: NumPy's BLAS gets one thread, unless the user's
    environment names a count (kept as given)."""
    from envforge.app.references import child_environ

    given = child_environ({"PATH": "/usr/bin", "OMP_NUM_THREADS": "4"})
    assert given["PATH"] == "/usr/bin" and given["OMP_NUM_THREADS"] == "4"
    assert given["OPENBLAS_NUM_THREADS"] == given["MKL_NUM_THREADS"] == "1"

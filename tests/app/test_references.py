"""The kernels' references from envforge's cache: the same as computed, and computed again
when the entry is damaged or the inputs differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.app.references import kernel_references
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
    """Theano's random kernel is computed by its pack's mrg.py: an edit there is a new entry."""
    from envforge.app.references import _sources

    names = {path.name for path in _sources(VERIFY, REGISTRY)}
    assert {"expectations.py", "kernels.py", "mrg.py"} <= names
    assert "mrg.py" not in {path.name for path in _sources(VerifySection(), REGISTRY)}

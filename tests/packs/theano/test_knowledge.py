"""Theano's knowledge files (packs/theano/theano.toml): they load into the pack's models,
their sources are the ones KNOWLEDGE.md defines, and the flag tables agree with each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.packs.theano.knowledge import (
    displaced_originals,
    suite_knowledge,
    theano_knowledge,
    theano_rules,
)
from envforge.spec import load_spec
from tests.testing.packs import REGISTRY


def test_both_files_load_into_the_typed_models() -> None:
    assert theano_knowledge().flags and suite_knowledge().subsets


def test_inferred_and_observed_rows_say_so() -> None:
    seen = [r for r in theano_knowledge().numpy if r.numpy == ">=1.22"]
    assert seen and all("seen here" in r.source for r in seen)
    assert all("*inferred*" in r.source for r in theano_knowledge().numpy
               if r.theano == "==1.1.2")


def test_source_keys_are_the_ones_knowledge_md_defines() -> None:
    theano_sources = [r.source for r in theano_knowledge().flags]
    assert all(s.startswith(("[TP]", "[TP112]")) for s in theano_sources)


@pytest.mark.parametrize("version", ["1.0.5", "1.1.2"])
def test_typed_flags_are_flags_the_release_defines(version: str) -> None:
    rules = theano_rules(version)
    assert set(rules.flags) <= rules.known_flags
    assert not any(row.matches(name) for row in rules.removed for name in rules.known_flags)


def test_theanorc_places_in_the_table_follow_theanos_own_split() -> None:
    rules = theano_rules("1.0.5")
    for flag in rules.flags.values():
        assert rules.theanorc_location(flag.name) == (flag.section, flag.key), flag.name


def test_naming_theano_pymc_overrides_the_original_theano_out_of_the_resolution() -> None:
    # pymc3 3.4.1 requires theano>=1.0.4: without the override the lock held Theano 1.0.4 and
    # Theano-PyMC 1.0.5, whose files overwrite each other's theano/ (verify's drift.files)
    assert displaced_originals(["pymc3==3.4.1", "Theano-PyMC==1.0.5 ; python_version<'4'"]) == (
        "Theano ; sys_platform == 'never'",)
    assert displaced_originals(["pymc3==3.4.1", "theano>=1.0.4"]) == ()  # compat refuses it
    assert displaced_originals(["numpy", "not a requirement ["]) == ()
    # lock asks every pack: only Theano's answers here
    assert [line for pack in REGISTRY for line in pack.resolver_overrides(
        ["pymc3==3.4.1", "Theano-PyMC==1.0.5"])] == ["Theano ; sys_platform == 'never'"]


def test_inits_debian_openblas_is_what_the_reference_spec_verifies_with() -> None:
    """The row init writes (theano.toml [[init_debian]]) and specs/theano-cpu.toml, whose
    verify's blas row passes with it, say the same: suite, packages, Linux's blas_ldflags."""
    (row,) = theano_knowledge().init_debian
    spec = load_spec(Path(__file__).resolve().parents[3] / "specs" / "theano-cpu.toml",
                     REGISTRY).for_platform(row.platform)
    assert spec.debian is not None
    assert (row.suite, row.packages) == (spec.debian.suite, spec.debian.packages)
    assert row.keys == {"blas_ldflags": spec.packs["theano"].model_dump()["blas_ldflags"]}


@pytest.mark.network
def test_the_gone_theano_modules_are_so_in_theano_pymcs_sdist(shared_cache: Path) -> None:
    """legacy_names.toml's [[gone_api]] rows for Theano-PyMC, read from the locked sdist:
    theano.sandbox.cuda only skips (pytest), theano.sandbox.neighbours is empty and its
    functions are in theano.tensor.nnet.neighbours, theano.tensor.signal has no downsample."""
    import tarfile

    from envforge.host.fetch import FileRef, obtain
    from envforge.importers.legacy_names import legacy_names
    from envforge.lockfile import load_lock

    lock = load_lock(Path(__file__).resolve().parents[3] / "locks" / "theano-cpu.lock",
                     REGISTRY).platforms["linux-64"]
    sdist = next(f for f in lock.pypi if f.kind == "sdist" and f.name == "theano-pymc")
    path = obtain(FileRef(sdist.url, sdist.sha256, sdist.filename, sdist.size),
                  cache=shared_cache)
    with tarfile.open(path) as tar:
        def member(name: str) -> bytes | None:
            try:
                found = tar.extractfile(f"Theano-PyMC-1.0.5/theano/{name}")
            except KeyError:
                return None
            return None if found is None else found.read()

        gone = {name for row in legacy_names().gone_api if row.requirement == "Theano-PyMC"
                for name in row.names}
        assert gone == {"theano.tensor.signal.downsample", "theano.sandbox.cuda",
                        "theano.sandbox.neighbours"}
        assert member("tensor/signal/downsample.py") is None
        assert b"pytest.skip(" in (member("sandbox/cuda/__init__.py") or b"")
        assert member("sandbox/neighbours.py") == b""
        assert b"\ndef images2neibs(" in (member("tensor/nnet/neighbours.py") or b"")

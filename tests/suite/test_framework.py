"""The suite's seam: the pack whose release a lock holds (or a spec pins) brings its runner,
subset, known-bad tests and run settings; a lock with no such release has no suite."""

from __future__ import annotations

from envforge.packs.theano import THEANO
from envforge.suite.framework import framework_suite, pinned_suite
from tests.testing.packs import REGISTRY


def test_the_lock_s_release_finds_its_pack_s_suite() -> None:
    found = framework_suite({"python": "3.7.16", "theano": "1.0.5", "numpy": "1.19.5"}, REGISTRY)
    assert found is not None
    suite, release = found
    assert suite is THEANO.suite and release == "1.0.5"
    runner = suite.runner(release)
    assert runner is not None and runner.package == "theano"
    cpu = suite.subset(release, "cpu")
    assert cpu is not None and cpu.device == "cpu" and cpu.tests
    assert suite.known_bad(release, "cuda", {"scipy": "1.7.3"})


def test_a_gpu_subset_adds_its_settings_to_the_framework_s_variable() -> None:
    suite = THEANO.suite
    assert suite is not None
    gpu = suite.subset("1.0.5", "cuda0")
    assert gpu is not None and gpu.device == "cuda"
    settings = suite.settings(gpu)
    assert settings is not None and settings[0] == "THEANO_FLAGS" and settings[1]


def test_no_release_no_suite() -> None:
    assert framework_suite({"python": "3.7.16", "numpy": "1.19.5"}, REGISTRY) is None
    assert pinned_suite(["numpy==1.19.5", "Theano-PyMC>=1.0"], REGISTRY) is None
    found = pinned_suite(["numpy==1.19.5", "Theano-PyMC==1.0.5"], REGISTRY)
    assert found is not None and found[1] == "1.0.5"

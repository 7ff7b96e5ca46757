"""The image recipe: what the Containerfile and the Apptainer definition say."""

from __future__ import annotations

import re

import pytest

from envforge.bundle.manifest import Manifest
from envforge.errors import InputError
from envforge.image import (
    BUNDLE,
    ENVFORGE,
    VERIFY_JSON,
    apptainer_definition,
    check_reference,
    containerfile,
    default_tag,
    recipe_for,
)

MANIFEST = Manifest(envforge="0.1.0", spec_name="theano-cpu-debian", spec_hash="sha256:" + "a" * 64,
                    spec="specs/theano-cpu-debian.toml", lock="locks/theano-cpu-debian.lock",
                    lock_sha256="b" * 64, platform="linux-64", python="3.11.2", files=())


def test_the_build_applies_offline_then_verifies_so_a_failing_stack_fails_the_build() -> None:
    text = containerfile(recipe_for(MANIFEST, base="localhost/base:bookworm", tag=None))
    run = text[text.index("RUN "):text.index("LABEL ")]
    steps = [s.strip() for s in run.split("&&")]
    assert steps[0].startswith("RUN python3 -m venv")
    assert "--no-index" in steps[1] and f"{BUNDLE}/envforge-wheels" in steps[1]
    assert steps[2].startswith(f"{ENVFORGE} apply") and "--offline" in steps[2]
    assert steps[3].startswith(f"{ENVFORGE} verify") and steps[3].endswith(VERIFY_JSON)
    assert text.splitlines()[1] == "FROM localhost/base:bookworm"


def test_labels_carry_the_lock_and_spec_hashes() -> None:
    text = containerfile(recipe_for(MANIFEST, base="b", tag="t"))
    labels = dict(re.findall(r'(\S+)="([^"]*)"', text[text.index("LABEL "):]))
    assert labels["io.envforge.lock.sha256"] == "b" * 64
    assert labels["io.envforge.spec.sha256"] == "a" * 64
    assert labels["io.envforge.spec"] == "theano-cpu-debian"


def test_apptainer_definition_starts_from_the_oci_archive_and_runs_in_the_env() -> None:
    text = apptainer_definition(recipe_for(MANIFEST, base="b", tag="t"), "x.oci.tar")
    assert text.startswith("Bootstrap: oci-archive\nFrom: x.oci.tar\n")
    assert f'exec {ENVFORGE} run {BUNDLE}/specs/theano-cpu-debian.toml -- "$@"' in text
    assert f"{ENVFORGE} verify" in text.split("%test", 1)[1]


def test_default_tag_is_a_valid_reference() -> None:
    assert default_tag("Theano CPU") == "localhost/envforge-theano-cpu:latest"


@pytest.mark.parametrize("reference", [
    "debian:12", "docker.io/library/debian:12", "localhost:5000/team/img:v1.2_rc-3",
    "localhost/envforge-theano-cpu:latest", "[::1]:5000/img", "Registry.Example.com/a__b/c--d",
    "debian@sha256:" + "0" * 64, "debian:12@sha256:" + "a" * 64, "a" * 255])
def test_references_of_distribution_reference_grammar_are_accepted(reference: str) -> None:
    assert check_reference(reference, "--base") == reference


@pytest.mark.parametrize("reference", [
    "", "debian:12\nRUN touch /pwned", "debian:12\n", " debian", "debian 12", "Debian:12",
    "debian:", "debian:-12", "debian:" + "1" * 129, "a-_b", "/debian", "debian/", "a//b",
    "debian@sha256:abc", "host:port/x", "a" * 256, "ubuntu:22.04\tlatest", "déb:12"])
def test_anything_else_is_refused_naming_the_option(reference: str) -> None:
    with pytest.raises(InputError, match=r"^-t .*: not an image reference"):
        check_reference(reference, "-t")


def test_the_recipe_refuses_a_base_that_would_add_a_containerfile_line() -> None:
    with pytest.raises(InputError, match="--base"):
        recipe_for(MANIFEST, base="debian:12\nRUN touch /pwned", tag=None)

"""The [debian] section init writes from the mounted packs' ``init_debian`` rows and the
``import_debian`` rows of the names the code uses: the platform's rows only, one suite, never
a key the section already sets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envforge.importers.debian import (
    debian_additions,
    debian_packages,
    dependencies,
    no_debian,
    section_keys,
)
from envforge.importers.legacy_names import FrameworkRow, framework_sections
from envforge.knowledge.models import InitDebianRow
from envforge.packapi import Registry
from tests.testing.packs import REGISTRY


@dataclass(frozen=True)
class RowPack:
    """A pack that brings only Debian rows (the core reads nothing else of it here)."""

    name: str
    init_debian: Sequence[InitDebianRow] = ()
    implicit: bool = False


def deb(packages: Sequence[str], *, suite: str = "bookworm", platform: Any = "linux-64",
        keys: dict[str, str] | None = None) -> InitDebianRow:
    return InitDebianRow(platform=platform, suite=suite, packages=tuple(packages),
                         keys=keys or {}, reason="needed", source="test")


def mounted(section: str, keys: dict[str, str] | None = None) -> FrameworkRow:
    return FrameworkRow(section=section, names=(section,), keys=keys or {}, reason="named",
                        source="test")


def test_the_theano_pack_adds_debians_openblas_on_linux_only() -> None:
    rows = framework_sections(["Theano-PyMC==1.0.5"], REGISTRY)
    (added,) = debian_additions(rows, "linux-64", REGISTRY)
    assert added.section == "theano" and added.where == "the theano pack"
    assert "libopenblas0-pthread" in added.row.packages
    assert "-lopenblas" in section_keys([added], "theano")["blas_ldflags"]
    assert debian_additions(rows, "win-64", REGISTRY) == []
    assert debian_additions(framework_sections(["torch==1.4.0"], REGISTRY), "linux-64",
                            REGISTRY) == []


def test_rows_of_one_suite_merge_and_another_suite_is_left_out() -> None:
    registry = Registry([RowPack("a", (deb(["liba", "libc"]), deb(["libz"], platform="win-64"))),
                         RowPack("b", (deb(["libb", "libc"]),
                                       deb(["libold"], suite="bullseye")))])
    added = debian_additions([mounted("a"), mounted("b")], "linux-64", registry)
    assert [(a.section, a.row.packages) for a in added] == [("a", ("liba", "libc")),
                                                            ("b", ("libb", "libc"))]
    assert debian_packages(added) == ["liba", "libc", "libb"]


def test_a_key_the_section_already_sets_is_not_overridden() -> None:
    flags = {"ldflags": "-lopenblas"}
    registry = Registry([RowPack("a", (deb(["libx"], keys=flags), deb(["liby"], keys=flags),
                                       deb(["libz"], keys={"other": "1"})))])
    added = debian_additions([mounted("a")], "linux-64", registry)
    assert [a.row.packages for a in added] == [("libx",), ("libz",)]  # the second ldflags: no
    assert section_keys(added, "a") == {"ldflags": "-lopenblas", "other": "1"}
    own = debian_additions([mounted("a", {"ldflags": "-lmkl_rt"})], "linux-64", registry)
    assert [a.row.packages for a in own] == [("libz",)]  # the mounted row's key wins
    assert debian_additions([mounted("unregistered")], "linux-64", registry) == []


VIDEO = {"gym.wrappers.monitoring.video_recorder": "vec_video_recorder.py:6"}


def test_a_module_that_runs_ffmpeg_adds_it_with_its_closure_on_linux_only() -> None:
    """baselines' VecVideoRecorder imports gym's video recorder, which runs ffmpeg."""
    (added,) = debian_additions([], "linux-64", REGISTRY, VIDEO)
    assert added.section is None and added.row.packages == ("ffmpeg",)
    assert added.cause == "gym.wrappers.monitoring.video_recorder (vec_video_recorder.py:6)"
    assert dependencies([added]) == "closure" and "DependencyNotInstalled" in added.row.reason
    assert debian_additions([], "win-64", REGISTRY, VIDEO) == []
    assert no_debian(VIDEO, "win-64") == [
        "gym.wrappers.monitoring.video_recorder (vec_video_recorder.py:6) runs `ffmpeg` from "
        "PATH: no [debian] on win-64 (Debian's packages are linux-64's), so install ffmpeg on "
        "PATH yourself"]
    assert no_debian(VIDEO, "linux-64") == []
    assert debian_additions([], "linux-64", REGISTRY, {"gym.make": "a.py:1"}) == []


def test_pack_rows_and_the_codes_merge_into_one_section_of_one_suite() -> None:
    theano = framework_sections(["Theano-PyMC==1.0.5"], REGISTRY)
    uses = {**VIDEO, "skvideo.io": "b.py:2"}
    added = debian_additions(theano, "linux-64", REGISTRY, uses)
    assert [a.section for a in added] == ["theano", None, None]
    assert debian_packages(added) == ["libopenblas0-pthread", "libgfortran5", "libquadmath0",
                                      "ffmpeg"]
    assert dependencies(added) == "closure" and dependencies(added[:1]) == "named"
    registry = Registry([RowPack("a", (deb(["libold"], suite="bullseye"),))])
    (old,) = debian_additions([mounted("a")], "linux-64", registry, VIDEO)
    assert old.row.suite == "bullseye"  # bookworm's ffmpeg would be a second suite: left out


def test_a_resolved_release_whose_wheel_loads_a_library_gets_its_package_on_linux() -> None:
    """sounddevice's Linux wheels never shipped PortAudio; soundfile's shipped libsndfile
    from 0.12.0 on (its first manylinux wheel): knowledge's ``library_debian`` rows."""
    added = debian_additions([], "linux-64", REGISTRY,
                             resolved={"sounddevice": "0.3.13", "soundfile": "0.10.3.post1"})
    assert [(a.row.packages, a.cause, a.row.dependencies) for a in added] == [
        (("libportaudio2",), "sounddevice 0.3.13 (as resolved)", "closure"),
        (("libsndfile1",), "soundfile 0.10.3.post1 (as resolved)", "closure")]
    assert debian_additions([], "linux-64", REGISTRY, resolved={"soundfile": "0.12.0"}) == []
    assert debian_additions([], "win-64", REGISTRY, resolved={"sounddevice": "0.3.13"}) == []
    # one suite: a library row of another suite than the mounted pack's is left out
    registry = Registry([RowPack("a", (deb(["liba"], suite="bullseye"),))])
    assert [a.row.packages for a in debian_additions(
        [mounted("a")], "linux-64", registry, resolved={"sounddevice": "0.3.13"})] == [("liba",)]


def test_a_named_project_whose_sdist_compiles_against_a_library_gets_its_dev_package() -> None:
    """PyAudio's extension includes portaudio.h (knowledge's ``build_debian`` rows): named by
    a requirement, Debian's portaudio19-dev comes with its closure, on linux-64 only."""
    (added,) = debian_additions([], "linux-64", REGISTRY, named={"pyaudio": "requirements.txt:4"})
    assert added.row.packages == ("portaudio19-dev",) and added.row.dependencies == "closure"
    assert added.cause == "PyAudio's build (requirements.txt:4)"
    assert debian_additions([], "win-64", REGISTRY, named={"pyaudio": "r.txt:1"}) == []
    assert debian_additions([], "linux-64", REGISTRY, named={"sounddevice": "r.txt:1"}) == []


def test_pygraphviz_gets_graphvizs_dev_package_for_its_build() -> None:
    """carpedm20/ENAS-pytorch's requirements.txt names pygraphviz, an sdist alone whose
    extension includes graphviz/cgraph.h: init had left it out (its build failed there);
    Debian's libgraphviz-dev comes with its closure, handed to the build."""
    (added,) = debian_additions([], "linux-64", REGISTRY,
                                named={"pygraphviz": "requirements.txt:5"})
    assert added.row.packages == ("libgraphviz-dev",) and added.row.dependencies == "closure"
    assert added.cause == "pygraphviz's build (requirements.txt:5)"

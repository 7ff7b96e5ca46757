"""Local builds' pins (PEP 440 ``+label``): told apart, and moved to their public release."""

from __future__ import annotations

from envforge.importers import Found, Imported
from envforge.importers.localbuilds import local_label, public_pins, public_version, sources


def test_a_local_label_is_told_from_a_public_version() -> None:
    assert (local_label("1.4.0+cpu"), local_label("1.4.0"), local_label("not a version")) == \
        ("cpu", None, None)
    assert (public_version("1.8.0+cu111"), public_version("1.8.0")) == ("1.8.0", "1.8.0")


def test_only_exact_pins_of_local_builds_move_and_their_markers_stay() -> None:
    found = [Found("torch==1.8.0+cpu; sys_platform != 'darwin'", "r.txt:2", "a note"),
             Found("torch==1.8.0; sys_platform == 'darwin'", "r.txt:3"),
             Found("torchvision===0.9.0+cpu", "r.txt:4"),
             Found("numpy>=1.18", "r.txt:5"),
             Found("x @ https://h.example/x-1.0+cpu-py3-none-any.whl", "r.txt:6")]
    moved = public_pins(found, "why")
    assert [f.requirement for f in moved] == [
        'torch==1.8.0; sys_platform != "darwin"', found[1].requirement, "torchvision==0.9.0",
        "numpy>=1.18", found[4].requirement]
    assert moved[0].note.startswith("a note; was torch==1.8.0+cpu; sys_platform != 'darwin': "
                                    "a local build (+cpu), why; PyPI holds none (PEP 440")
    assert moved[1] is found[1] and moved[3] is found[3]


def test_the_sources_are_the_pages_and_extra_indexes_once_each() -> None:
    imported = Imported(find_links=[("https://a/p.html", "r:1"), ("https://a/p.html", "s:1")],
                        extra_indexes=[("https://b/simple", "r:2")])
    assert sources(imported) == ("https://a/p.html", "https://b/simple")


def test_a_cuda_builds_note_says_its_cuda_and_that_pypis_may_differ() -> None:
    """``torch==1.7.1+cu110``: PyPI's torch 1.7.1 is CUDA 10.2's build (the torch pack's
    wheel table), not 11.0's: the note says which CUDA the pin asked for."""
    (moved,) = public_pins([Found("torch==1.7.1+cu110", "Dockerfile:2")], "why")
    assert moved.requirement == "torch==1.7.1"
    assert moved.note.endswith("1.7.1 is the release it was built from (the build was for "
                               "CUDA 11.0; PyPI's may be for another, which the host's "
                               "driver must run: verify's device rows say)")
    assert public_pins([Found("torch==1.5.0+cu92", "r:1")], "w")[0].note.endswith(
        "(the build was for CUDA 9.2; PyPI's may be for another, which the host's driver "
        "must run: verify's device rows say)")
    assert "CUDA" not in public_pins([Found("torch==1.4.0+cpu", "r:1")], "w")[0].note

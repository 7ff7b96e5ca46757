"""What the PyPI step counts as installed: a ``.dist-info`` with its RECORD, which pypa's
installer writes last, so an install cut short is done again."""

from __future__ import annotations

from pathlib import Path

from envforge.steps.pypi import installed_distributions


def test_a_dist_info_without_its_record_is_an_install_cut_short(tmp_path: Path) -> None:
    whole = tmp_path / "six-1.16.0.dist-info"
    whole.mkdir()
    (whole / "METADATA").write_text("Name: six\n")
    (whole / "RECORD").write_text("six.py,,\n")
    cut = tmp_path / "NumPy-1.19.5.dist-info"
    cut.mkdir()
    (cut / "METADATA").write_text("Name: numpy\n")  # numpy.libs/ and RECORD never came
    assert installed_distributions(tmp_path) == {"six": "1.16.0"}

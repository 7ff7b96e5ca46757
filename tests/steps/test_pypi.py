"""What the PyPI step counts as installed: a ``.dist-info`` with its RECORD, which pypa's
installer writes last, so an install cut short is done again."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from envforge.steps.pypi import installed_distributions, say_skipped_pycache
from envforge.ui import UI
from tests.testing.contexts import make_ctx


def test_a_dist_info_without_its_record_is_an_install_cut_short(tmp_path: Path) -> None:
    whole = tmp_path / "six-1.16.0.dist-info"
    whole.mkdir()
    (whole / "METADATA").write_text("Name: six\n")
    (whole / "RECORD").write_text("six.py,,\n")
    cut = tmp_path / "NumPy-1.19.5.dist-info"
    cut.mkdir()
    (cut / "METADATA").write_text("Name: numpy\n")  # numpy.libs/ and RECORD never came
    assert installed_distributions(tmp_path) == {"six": "1.16.0"}


def test_skipped_compiled_files_are_one_line_per_wheel(tmp_path: Path) -> None:
    """ml30's apply printed PyYAML 5.4.1's 17 skipped .pyc files as 17 RuntimeWarnings, each
    with its source line, even with -q; a -q apply now prints nothing of them."""
    err = io.StringIO()
    ctx = replace(make_ctx(tmp_path, "linux-64", None),
                  ui=UI(err=Console(file=err, highlight=False, soft_wrap=True)))
    say_skipped_pycache(ctx, {"PyYAML": 17})
    assert err.getvalue() == ("PyYAML: 17 file(s) its wheel carries under __pycache__/ not "
                              "installed (compiled bytecode: Python writes its own)\n")
    say_skipped_pycache(replace(ctx, ui=UI(quiet=True, err=ctx.ui.err)), {"PyYAML": 17})
    assert err.getvalue().count("PyYAML") == 1

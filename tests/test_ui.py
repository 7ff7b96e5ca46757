"""The UI's tables: a huge cell is cut, so a long requirement cannot stall the command."""

from __future__ import annotations

import io
import time

from rich.console import Console
from rich.text import Text

from envforge.ui import CELL_LIMIT, UI


def test_a_huge_cell_is_cut_with_what_was_left_out() -> None:
    out = io.StringIO()
    ui = UI(out=Console(file=out, width=400, highlight=False))
    started = time.monotonic()
    ui.table("t", ["requirement", "from"], [["a" * 2_000_000, "r.txt:1"],
                                            [Text("b" * (CELL_LIMIT + 5)), "r.txt:2"]])
    assert time.monotonic() - started < 2
    text = out.getvalue()
    assert f"({2_000_000 - CELL_LIMIT} more characters)" in text
    assert "(5 more characters)" in text and "r.txt:2" in text
    assert text.count("a") < CELL_LIMIT + 100

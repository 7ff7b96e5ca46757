"""The UI's tables: a huge cell is cut, so a long requirement cannot stall the command; a quiet
run does not import rich."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console
from rich.text import Text

from envforge.ui import CELL_LIMIT, PIPED_WIDTH, UI
from tests.testing.imports import imported_after


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


VERIFY_ROWS = [["kernel.train.checksum", "ok", "matches the lock's reference " * 6],
               ["gemm", "ok", "0.93 of cuBLAS"], ["blas", "", "a\nsecond line"]]


def _piped_table(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> list[str]:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    out = io.StringIO()
    UI(out=Console(file=out, highlight=False, soft_wrap=True)).table(
        "verify", ["check", "result", "detail"], VERIFY_ROWS)
    return out.getvalue().splitlines()


def test_a_piped_table_is_wide_and_never_cuts_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """`make demo | tee` cut the verify table at 80 columns: ``kernel.train.c`` / ``hecksum``."""
    lines = _piped_table(monkeypatch, None)
    assert any("kernel.train.checksum" in line for line in lines)
    assert max(len(line) for line in lines) <= PIPED_WIDTH
    assert sum("matches" in line for line in lines) == 1  # 200 columns: one row, one line


def test_columns_sets_a_piped_table_s_width_and_words_still_stay_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _piped_table(monkeypatch, "50")
    assert max(len(line) for line in lines) <= 50
    assert any("kernel.train.checksum" in line for line in lines)
    words = " ".join(line.strip("│ ") for line in lines).split()
    assert {"reference", "matches", "lock's"} <= set(words)
    lines = _piped_table(monkeypatch, "20")  # narrower than a name: widened to keep it whole
    assert any("kernel.train.checksum" in line for line in lines)


def test_a_download_on_a_terminal_is_a_bar_then_one_line_and_nothing_in_json() -> None:
    err = io.StringIO()
    ui = UI(err=Console(file=err, force_terminal=True, width=100, highlight=False))
    with ui.download("numpy-1.19.5.whl", 3 << 20, have=1 << 20) as advance:
        advance(2 << 20)
    assert "downloaded numpy-1.19.5.whl (3.0 MiB in " in err.getvalue()
    err = io.StringIO()
    with UI(json=True, err=Console(file=err)).download("x.whl", None) as advance:
        advance(10)
    assert err.getvalue() == ""


def test_a_quiet_run_never_imports_rich() -> None:
    """apply -q prints nothing, so it need not pay rich's import (~20 ms of its start-up)."""
    code = ("from envforge.ui import UI\nui = UI(quiet=True)\n"
            "ui.info('i'); ui.success('s'); ui.next('n'); ui.table('t', ['a'], [['b']])\n"
            "with ui.progress('p', 2) as hook:\n    hook.advance()\n"
            "with ui.download('d.whl', 10) as advance:\n    advance(10)")
    assert imported_after(code, ["rich"]) == []

"""Wine's CreateProcess now and then fails with ERROR_INTERNAL_ERROR (WinError 1359) when
wineserver is busy (seen in CI with the fleet lane beside the Windows lane). Windows itself
does not fail that way, and no child started, so the Windows lane's test process tries the
call again rather than failing a test that never ran envforge."""

from __future__ import annotations

import importlib
import time
from typing import Any

WINE_INTERNAL_ERROR = 1359
TRIES = 4


def retry_spawns() -> None:
    """Wrap ``_winapi.CreateProcess`` (win32 only), which subprocess calls with the pipe
    handles still open: a retry there, unlike one around ``Popen._execute_child`` (whose
    ``finally`` closes the child's ends), starts the same child again."""
    winapi = importlib.import_module("_winapi")  # Windows only
    create = winapi.CreateProcess

    def create_process(*args: Any) -> Any:
        for attempt in range(1, TRIES + 1):
            try:
                return create(*args)
            except OSError as exc:
                if getattr(exc, "winerror", None) != WINE_INTERNAL_ERROR or attempt == TRIES:
                    raise
                time.sleep(0.2 * attempt)
        raise AssertionError("unreachable")

    winapi.CreateProcess = create_process  # type: ignore[attr-defined]

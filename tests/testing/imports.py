"""What a fresh interpreter has imported after running some code: start-up tests hold a
command's path to the modules it needs (rich, pydantic, argparse cost tens of ms each)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

_REPORT = ("\nimport json, sys\n"
           "print(json.dumps(sorted(m for m in sys.modules if m.startswith({!r}))))")


def imported_after(code: str, prefixes: Sequence[str]) -> list[str]:
    """The modules named by ``prefixes`` that ``code``, run by a new interpreter, imported."""
    done = subprocess.run([sys.executable, "-c", code + _REPORT.format(tuple(prefixes))],
                          capture_output=True, text=True, check=True, timeout=60)
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found

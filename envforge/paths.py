"""Where envforge keeps its cache, environments and state.

``ENVFORGE_HOME`` puts everything under one folder (tests and bundles use it);
otherwise the platform's conventional user folders are used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EnvforgeDirs:
    cache: Path  # downloaded artifacts and indexes, keyed by sha256 or URL
    data: Path  # environments envforge creates when no other place is given
    state: Path  # journals, backups and records of what was applied

    def env_state(self, env_id: str) -> Path:
        return self.state / env_id


def envforge_dirs(environ: dict[str, str] | None = None) -> EnvforgeDirs:
    env = os.environ if environ is None else environ
    home = env.get("ENVFORGE_HOME")
    if home:
        root = Path(home)
        return EnvforgeDirs(root / "cache", root / "data", root / "state")
    import platformdirs  # its import (2 ms) is a start-up cost that ENVFORGE_HOME spares

    return EnvforgeDirs(
        Path(platformdirs.user_cache_dir("envforge")),
        Path(platformdirs.user_data_dir("envforge")),
        Path(platformdirs.user_state_dir("envforge")),
    )

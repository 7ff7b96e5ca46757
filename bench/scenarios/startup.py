"""Start-up: ``--version``, ``--help`` and ``status`` against the bare interpreter's."""

from __future__ import annotations

from pathlib import Path

from bench.harness import Bench, Goal, clean_environ, timed
from bench.scenarios.common import Tools


def run_startup(bench: Bench, tools: Tools, home: Path | None, rounds: int) -> None:
    """``home``: an ENVFORGE_HOME with an environment applied, so status has one to check."""
    env = clean_environ(**({"ENVFORGE_HOME": str(home)} if home else {}))
    applied = len(list((home / "state").glob("*/applied.json"))) if home else 0
    rows = [("python", "python -c pass (envforge's interpreter)", [tools.python, "-c", "pass"]),
            ("version", "envforge --version", [tools.envforge, "--version"]),
            ("help", "envforge --help", [tools.envforge, "--help"]),
            ("status", f"envforge status ({applied} environment{'s' * (applied != 1)} "
             "applied)", [tools.envforge, "status"])]
    timed([tools.envforge, "status"], env=env)  # untimed: the real path, which stamps it
    bench.paired("Start-up", rounds, [
        (f"startup-{key}", label, " ".join(Path(w).name for w in argv),
         lambda i, argv=argv: timed(argv, env=env)) for key, label, argv in rows])
    for key in ("version", "help", "status"):
        bench.goals.append(Goal(f"envforge {'--' if key != 'status' else ''}{key} ÷ python -c "
                                "pass", f"startup-{key}", "startup-python", 2.5))

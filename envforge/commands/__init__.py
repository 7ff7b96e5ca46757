"""One module per subcommand; each command beyond lock and export registers its own arguments.

Only the module of the command being run is imported (``envforge apply`` never loads the
bundle or doctor code): start-up time is most of a no-op apply.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

Common = Callable[[argparse.ArgumentParser], None]
Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]", Common], None]

# command name -> the module whose ``register`` adds it (and its siblings)
COMMAND_MODULES: dict[str, str] = {
    "apply": "envforge.commands.apply", "plan": "envforge.commands.apply",
    "rollback": "envforge.commands.apply", "status": "envforge.commands.apply",
    "run": "envforge.commands.apply", "verify": "envforge.commands.verify",
    "bundle": "envforge.commands.bundle", "doctor": "envforge.commands.doctor",
    "image": "envforge.commands.image",
    "init": "envforge.commands.init",
}


BUILT_IN = ("lock", "export")  # defined by cli.py itself


def registry(command: str | None = None) -> list[Register]:
    """The ``register`` functions to call: the one for ``command``, none for the built-in
    ones, all of them for anything else (help, a typo)."""
    if command in BUILT_IN:
        return []
    wanted = ([COMMAND_MODULES[command]] if command in COMMAND_MODULES
              else list(dict.fromkeys(COMMAND_MODULES.values())))
    return [importlib.import_module(name).register for name in wanted]

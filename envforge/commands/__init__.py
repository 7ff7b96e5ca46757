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
    "add": "envforge.commands.edit", "remove": "envforge.commands.edit",
}


BUILT_IN = ("lock", "export")  # defined by cli.py itself

# What `envforge --help` lists, in its order, without importing any command's module (a
# test checks it against the modules' own registrations).
SUMMARIES: dict[str, str] = {
    "apply": "provision the environment a spec's lock describes",
    "plan": "show what apply would change, and change nothing",
    "rollback": "undo what apply changed, byte for byte",
    "status": "what envforge has applied on this host",
    "run": "run a command inside an applied environment",
    "verify": "prove an applied environment does what its lock promised",
    "bundle": "gather a lock's files into a folder a host with no network can apply",
    "doctor": "diagnose this host: driver, CUDA, cuDNN, compilers, each framework's config",
    "image": "build an OCI image from a bundle (applied and verified inside)",
    "init": "write a spec from a repository's requirements files "
            "(with none, from its code's imports)",
    "add": "add PyPI requirements to a spec (or replace them, by name) and re-lock",
    "remove": "remove PyPI packages from a spec and re-lock",
}


def summaries(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Every command as a name and a line, for help and for naming a mistyped command."""
    for name, help_text in SUMMARIES.items():
        sub.add_parser(name, help=help_text)


def registry(command: str | None = None) -> list[Register]:
    """The ``register`` functions to call: the one for ``command``, none for the built-in
    ones, all of them with ``command="*"``; anything else (help, a typo) is answered by
    ``summaries``."""
    if command in BUILT_IN:
        return []
    wanted = ([COMMAND_MODULES[command]] if command in COMMAND_MODULES
              else list(dict.fromkeys(COMMAND_MODULES.values())) if command == "*" else [])
    return [importlib.import_module(name).register for name in wanted]

"""One module per subcommand; each later command registers its own arguments."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Common = Callable[[argparse.ArgumentParser], None]
Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]", Common], None]


def registry() -> list[Register]:
    """The ``register`` functions of the commands beyond lock and export."""
    from envforge.commands import apply, bundle, doctor, verify

    return [apply.register, verify.register, bundle.register, doctor.register]

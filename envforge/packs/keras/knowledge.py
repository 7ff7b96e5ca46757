"""The Keras pack's facts (``keras.toml`` beside this module), typed by its own models."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from envforge.knowledge.models import Range, Row
from envforge.packs.pitfalls import PitfallRow
from envforge.packs.shared import aliases
from envforge.spec import Frozen


class ConfigRow(Row):
    what: str
    path: str
    # the Keras releases the row holds for; all of 2.x when absent
    keras: Range | None = None
    # what to do where the row makes a spec's setting ineffective
    fix: str | None = None


class KerasFile(Frozen):
    pitfalls: tuple[PitfallRow, ...]
    config: tuple[ConfigRow, ...]


KNOWLEDGE_FILE = "keras"


@functools.cache
def keras_knowledge() -> KerasFile:
    """Every Keras fact, validated; a malformed row is a bug in the package and raises."""
    text = resources.files(__package__).joinpath(f"{KNOWLEDGE_FILE}.toml").read_text("utf-8")
    return KerasFile.model_validate(tomllib.loads(text))


def config_row(what: str) -> ConfigRow:
    return next(row for row in keras_knowledge().config if row.what == what)


def part_aliases() -> dict[str, str]:
    """The distributions a pitfall's ``tensorflow`` part stands for (``tensorflow-gpu`` ...),
    from the facts the packs share."""
    return aliases("tensorflow")

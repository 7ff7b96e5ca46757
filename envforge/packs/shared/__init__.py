"""Facts more than one pack reads, kept below the packs so that no pack imports another
(pyproject's independence contract): which PyPI distributions install a framework's import
package (``distributions.toml``, each row with its source)."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from pydantic import Field

from envforge.knowledge.models import Row
from envforge.spec import Frozen

KNOWLEDGE_FILE = "distributions"


class DistributionsRow(Row):
    package: str  # the import package they install: "tensorflow"
    names: tuple[str, ...] = Field(min_length=1)


class DistributionsFile(Frozen):
    distributions: tuple[DistributionsRow, ...]


@functools.cache
def shared_knowledge() -> DistributionsFile:
    """The shared facts, validated; a malformed row is a bug in the package and raises."""
    text = resources.files(__package__).joinpath(f"{KNOWLEDGE_FILE}.toml").read_text("utf-8")
    return DistributionsFile.model_validate(tomllib.loads(text))


def aliases(package: str) -> dict[str, str]:
    """Every distribution name that installs ``package`` -> ``package``."""
    return {name: package for row in shared_knowledge().distributions if row.package == package
            for name in row.names}

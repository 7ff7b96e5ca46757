"""The TensorFlow pack's facts (``tensorflow.toml`` beside this module), typed and looked up.

Kept in the pack's folder with its own models, so that adding the pack added no row to the
core's knowledge base; every row names its source, as the core's do.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from pydantic import Field

from envforge.knowledge.models import Range, Row, in_range
from envforge.packs.pitfalls import PitfallRow
from envforge.packs.shared import aliases as shared_aliases
from envforge.spec import Frozen, Platform


class GpuBuildRow(Row):
    """The releases of one distribution whose wheels hold the GPU build (TensorFlow 1.x)."""

    distribution: str
    tensorflow: Range
    # what a release outside the range means where the spec asks for the GPU, and the fix
    effect: str
    fix: str


class BuildConfigRow(Row):
    tensorflow: Range
    python: Range
    cuda: str
    cudnn: Range


class GpuLibraryRow(Row):
    tensorflow: Range
    library: str
    files: dict[Platform, str]


class VariableRow(Row):
    name: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    meaning: str


class TensorflowFile(Frozen):
    gpu_builds: tuple[GpuBuildRow, ...] = ()
    tested: tuple[BuildConfigRow, ...]
    pitfalls: tuple[PitfallRow, ...]
    notices: tuple[PitfallRow, ...] = ()
    gpu_libraries: tuple[GpuLibraryRow, ...]
    variables: tuple[VariableRow, ...]


KNOWLEDGE_FILE = "tensorflow"


@functools.cache
def tensorflow_knowledge() -> TensorflowFile:
    """Every TensorFlow fact, validated; a malformed row is a bug in the package and raises."""
    text = resources.files(__package__).joinpath(f"{KNOWLEDGE_FILE}.toml").read_text("utf-8")
    return TensorflowFile.model_validate(tomllib.loads(text))


def aliases() -> dict[str, str]:
    """Every distribution name that installs ``tensorflow`` -> ``tensorflow`` (a fact Keras's
    rules read too: ``envforge/packs/shared/distributions.toml``)."""
    return shared_aliases("tensorflow")


def gpu_build(distribution: str) -> GpuBuildRow | None:
    """Which of ``distribution``'s 1.x releases hold the GPU build; None for one that never
    does (``tensorflow-cpu``) or is not TensorFlow."""
    return next((row for row in tensorflow_knowledge().gpu_builds
                 if row.distribution == distribution), None)


def gpu_libraries(tensorflow: str, platform: Platform) -> tuple[GpuLibraryRow, ...]:
    """The libraries a GPU build of this release dlopens on ``platform``."""
    return tuple(row for row in tensorflow_knowledge().gpu_libraries
                 if in_range(tensorflow, row.tensorflow) and platform in row.files)


def build_configuration(tensorflow: str) -> BuildConfigRow | None:
    """TensorFlow's tested build configuration for a release, where it lists one."""
    return next((row for row in tensorflow_knowledge().tested
                 if in_range(tensorflow, row.tensorflow)), None)


def variable(name: str) -> VariableRow:
    return next(row for row in tensorflow_knowledge().variables if row.name == name)

"""What a lock holds for Keras: ``[platforms.X.expect.keras]``: keras.json's values, and a
model trained on the back-end with its loss curve and final weights computed by NumPy.

The model is the core's ``train`` kernel (logistic regression, full-batch SGD from zero
weights) built as a Keras ``Dense(1, sigmoid)``: one batch per epoch, so Keras's epoch
loss is the loss before each update, as the reference records it. Its inputs and
reference use Keras's floatx. The resolved versions are judged against the pack's
pitfalls here too: an unpinned h5py that resolved to 3.x is refused at lock time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from envforge.errors import CompatibilityError
from envforge.lockfile import Expectations, KernelExpectation
from envforge.packs.keras.section import keras_section
from envforge.spec import FiniteFloat, Frozen, PlatformSpec

KERAS_DIR_IN_ENV = "keras"


class KerasExpect(Frozen):
    backend: Literal["tensorflow", "theano"]
    floatx: Literal["float16", "float32", "float64"]
    epsilon: FiniteFloat
    image_data_format: Literal["channels_last", "channels_first"]
    # where keras.json is, "{prefix}" left in place, or "~" for the user's home
    keras_json: str
    train: KernelExpectation


def keras_expect(expect: Expectations) -> KerasExpect | None:
    found = expect.packs.get("keras")
    return found if isinstance(found, KerasExpect) else None


def keras_json_path(pspec: PlatformSpec) -> str:
    if keras_section(pspec).keras_json == "env":
        return "{prefix}/" + KERAS_DIR_IN_ENV + "/keras.json"
    return "~/.keras/keras.json"


def expectations(pspec: PlatformSpec, versions: Mapping[str, str]) -> KerasExpect:
    from envforge.expectations import KERNEL_SHAPES, expect_kernel

    refuse_resolved(pspec, versions)
    section = keras_section(pspec)
    verify = pspec.verify
    train = expect_kernel("train", seed=verify.seed, shape=KERNEL_SHAPES["train"],
                          float_x=section.floatx, rtol=verify.rtol, atol=verify.atol)
    return KerasExpect(backend=section.backend, floatx=section.floatx, epsilon=section.epsilon,
                       image_data_format=section.image_data_format,
                       keras_json=keras_json_path(pspec), train=train)


def refuse_resolved(pspec: PlatformSpec, versions: Mapping[str, str]) -> None:
    from envforge.packs.keras.compat import home_message, ignores_keras_home
    from envforge.packs.keras.knowledge import config_row, keras_knowledge, part_aliases
    from envforge.packs.pitfalls import exact_parts, fired, message

    aliases = part_aliases()
    parts = exact_parts(versions, aliases)
    named = {aliases.get(name, name): version for name, version in versions.items()}
    for row in fired(keras_knowledge().pitfalls, parts):
        shown = {name: f"{name} {named.get(name)}" for name in row.when}
        raise CompatibilityError(f"{pspec.platform}: resolved {message(row, shown)}",
                                 source=row.source, fix=row.fix)
    if "keras" in parts and ignores_keras_home(keras_section(pspec), parts["keras"]):
        raise CompatibilityError(
            f"{pspec.platform}: resolved {home_message('keras ' + named['keras'])}",
            source=config_row("KERAS_HOME").source, fix=config_row("KERAS_HOME").fix or "")


def keras_json_text(expect: KerasExpect) -> str:
    """keras.json as Keras 2.x writes it (json.dumps with indent=4)."""
    import json

    return json.dumps({"floatx": expect.floatx, "epsilon": expect.epsilon,
                       "backend": expect.backend,
                       "image_data_format": expect.image_data_format}, indent=4) + "\n"

"""The ``[keras]`` section of a spec: Keras's keras.json as the user means it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envforge.spec import FiniteFloat, Frozen, PlatformSpec


class KerasSection(Frozen):
    """keras.json's keys, and where it goes: in the environment (KERAS_HOME set by
    activation) or the user's ``~/.keras`` (backed up by the journal)."""

    # the back-end is a framework pack the spec mounts: [tensorflow] or [theano]
    backend: Literal["tensorflow", "theano"] = "tensorflow"
    floatx: Literal["float16", "float32", "float64"] = "float32"
    epsilon: FiniteFloat = Field(default=1e-7, gt=0, lt=1)
    image_data_format: Literal["channels_last", "channels_first"] = "channels_last"
    keras_json: Literal["env", "home"] = "env"


def keras_section(pspec: PlatformSpec) -> KerasSection:
    section = pspec.packs.get("keras")
    return section if isinstance(section, KerasSection) else KerasSection()


# Each key of the section, what it means and an example (the spec reference, envforge.specdoc)
SPEC_KEYS: dict[str, tuple[str, str]] = {
    "keras.backend": ("the back-end Keras runs on: a framework pack the spec mounts "
                      "([tensorflow] or [theano]); keras.json's and KERAS_BACKEND", '"theano"'),
    "keras.floatx": ("keras.json's floatx: Keras's float type (its model in verify too)",
                     '"float32"'),
    "keras.epsilon": ("keras.json's epsilon: the fuzz factor Keras adds in its losses", "1e-07"),
    "keras.image_data_format": ("keras.json's image_data_format", '"channels_last"'),
    "keras.keras_json": ("where keras.json goes: the environment (KERAS_HOME set by "
                         "activation) or the home folder's .keras (backed up, restored by "
                         "rollback)", '"env"'),
}

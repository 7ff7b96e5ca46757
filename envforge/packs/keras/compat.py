"""Keras's rules on a spec's pins: its pitfalls (h5py 3 with Keras < 2.4, Keras 2.4+ on
TensorFlow 1.x), keras.json in the environment for a Keras that knows no KERAS_HOME, and a
back-end that the spec mounts as a framework pack."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envforge.compat import Pin, Releases, interval
from envforge.packs.base import Report
from envforge.packs.keras.knowledge import config_row, keras_knowledge, part_aliases
from envforge.packs.keras.section import KerasSection, keras_section
from envforge.packs.pitfalls import fired, message, spec_parts
from envforge.spec import PlatformSpec


def compat_checks(pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                  report: Report) -> None:
    aliases = part_aliases()
    parts = spec_parts(pspec, pins, aliases)
    written = {aliases.get(name, name): found[0].written for name, found in pins.items()
               if found}
    for row in fired(keras_knowledge().pitfalls, parts):
        report(row.id, message(row, written), row.source, row.fix)
    section = keras_section(pspec)
    if "keras" in parts and ignores_keras_home(section, parts["keras"]):
        home = config_row("KERAS_HOME")
        report("keras-home", home_message(written["keras"]), home.source, home.fix or "")
    backend = section.backend
    if backend not in pspec.packs:
        report("keras-backend", f"[keras] backend = \"{backend}\", but the spec has no "
               f"[{backend}] section: nothing provisions or verifies the back-end",
               config_row("backends").source,
               f"add a [{backend}] section (and its packages), or set [keras] backend to the "
               "framework the spec mounts")


def ignores_keras_home(section: KerasSection, keras: Releases) -> bool:
    """keras.json is to go in the environment, but every release allowed reads only ~/.keras."""
    ignoring = interval(config_row("KERAS_HOME").keras or "")
    return section.keras_json == "env" and ignoring is not None and keras.within(ignoring)


def home_message(keras: str) -> str:
    return (f'{keras} with [keras] keras_json = "env" (KERAS_HOME set by activation): '
            f"KERAS_HOME is {config_row('KERAS_HOME').path}; verify's keras.json row would fail")

"""Keras's rules on a spec's pins: its pitfalls (h5py 3 with Keras < 2.4), and a back-end
that the spec mounts as a framework pack."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envforge.compat import Pin
from envforge.packs.base import Report
from envforge.packs.keras.knowledge import config_row, keras_knowledge
from envforge.packs.keras.section import keras_section
from envforge.packs.pitfalls import fired, message, spec_parts
from envforge.spec import PlatformSpec


def compat_checks(pspec: PlatformSpec, pins: Mapping[str, Sequence[Pin]],
                  report: Report) -> None:
    written = {name: found[0].written for name, found in pins.items() if found}
    for row in fired(keras_knowledge().pitfalls, spec_parts(pspec, pins)):
        report(row.id, message(row, written), row.source, row.fix)
    backend = keras_section(pspec).backend
    if backend not in pspec.packs:
        report("keras-backend", f"[keras] backend = \"{backend}\", but the spec has no "
               f"[{backend}] section: nothing provisions or verifies the back-end",
               config_row("backends").source,
               f"add a [{backend}] section (and its packages), or set [keras] backend to the "
               "framework the spec mounts")

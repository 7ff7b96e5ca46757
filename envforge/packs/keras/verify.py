"""Verify's Keras rows: the back-end and keras.json values Keras loaded, the file it read,
and the model trained on the back-end against the lock's NumPy loss curve."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envforge.lockfile import Expectations
from envforge.packs.keras.expect import keras_expect
from envforge.verify import CheckRow, kernel_request, kernel_rows
from envforge.verify.untrusted import _map


def probe_request(expect: Expectations) -> dict[str, Any]:
    table = keras_expect(expect)
    return {"keras": {"train": kernel_request(table.train)}} if table is not None else {}


def verify_rows(report: Mapping[str, Any], expect: Expectations, *, prefix: str | None,
                gpu_expected: bool) -> list[CheckRow]:
    table = keras_expect(expect)
    if table is None:
        return [CheckRow("keras.lock", "a keras table", "none", "fail",
                         "the lock holds no Keras table: run `envforge lock` again")]
    section = _map(report.get("keras"))
    config = _map(section.get("config"))
    if not config or config.get("error"):
        why = str(config.get("error") or _map(report.get("import_errors")).get("keras")
                  or "the Keras probe did not report")
        rows = [CheckRow(f"keras.{name}", str(wanted), "keras not imported", "fail",
                         why)
                for name, wanted in (("backend", table.backend), ("floatx", table.floatx))]
        return [*rows, *kernel_rows(None, table.train, base="keras.train")]
    rows = []
    for name, wanted in (("backend", table.backend), ("floatx", table.floatx),
                         ("image_data_format", table.image_data_format)):
        found = config.get(name)
        ok = found == wanted
        why = "" if ok else (f"Keras runs with {name}={found}; KERAS_BACKEND="
                             f"{config.get('keras_backend_variable')}, keras.json "
                             f"{config.get('config_path')}")
        rows.append(CheckRow(f"keras.{name}", wanted, str(found), "pass" if ok else "fail", why))
    found_eps = config.get("epsilon")
    ok = isinstance(found_eps, int | float) and math.isclose(found_eps, table.epsilon)
    rows.append(CheckRow("keras.epsilon", f"{table.epsilon:g}", str(found_eps),
                         "pass" if ok else "fail", "" if ok else "keras.json's epsilon differs"))
    rows.append(_config_row(config, table.keras_json, prefix))
    entry = section.get("train")
    rows += kernel_rows(entry if isinstance(entry, Mapping) else None, table.train,
                        base="keras.train")
    return rows


def _config_row(config: Mapping[str, Any], wanted: str, prefix: str | None) -> CheckRow:
    found = config.get("config_path")
    if "{prefix}" in wanted:
        if prefix is None:
            return CheckRow("keras.json", wanted, str(found), "skip",
                            "the path names the environment's folder; none was given")
        wanted = wanted.replace("{prefix}", prefix)
    elif wanted.startswith("~"):
        return CheckRow("keras.json", wanted, str(found),
                        "pass" if found and Path(found).name == "keras.json" else "fail")
    ok = found is not None and Path(str(found)) == Path(wanted)
    return CheckRow("keras.json", wanted, str(found), "pass" if ok else "fail",
                    "" if ok else "Keras read another keras.json: is KERAS_HOME set by the "
                                  "environment's activation (`envforge run`)?")

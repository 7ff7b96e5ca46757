"""Verify's TensorFlow rows: the devices TensorFlow lists, the variables it started with and,
for a GPU lock, each library its loader asks for. Read from the probe's ``tensorflow``
section defensively: a missing field is a failing row, never an exception."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envforge.lockfile import Expectations
from envforge.packs.tensorflow.expect import tensorflow_expect
from envforge.verify import CheckRow
from envforge.verify.untrusted import _list, _map


def probe_request(expect: Expectations) -> dict[str, Any]:
    table = tensorflow_expect(expect)
    return {"tensorflow": {"device": table.device, "float_x": expect.float_x,
                           "variables": sorted(table.variables),
                           "gpu_libraries": list(table.gpu_libraries)}}


def verify_rows(report: Mapping[str, Any], expect: Expectations, *, prefix: str | None,
                gpu_expected: bool) -> list[CheckRow]:
    table = tensorflow_expect(expect)
    section = report.get("tensorflow")
    if not isinstance(section, Mapping):
        return [CheckRow("tensorflow.devices", "a device list", "no tensorflow section", "fail",
                         "the TensorFlow probe did not report")]
    rows = [_devices_row(report, section, table.device, gpu_expected)]
    seen = _map(section.get("variables"))
    for name, wanted in sorted(table.variables.items()):
        found = seen.get(name)
        rows.append(CheckRow(f"tensorflow.env.{name}", wanted, str(found),
                             "pass" if found == wanted else "fail",
                             "" if found == wanted else
                             f"TensorFlow started with {name}={found}; the lock sets {wanted} "
                             "through the environment's activation (`envforge run`)"))
    libraries = _map(section.get("libraries"))
    for name in table.gpu_libraries:
        row = f"tensorflow.library.{name}"
        if not gpu_expected:
            rows.append(CheckRow(row, "loads", "-", "skip", "no GPU on this run"))
        elif name in libraries and libraries[name] is None:
            rows.append(CheckRow(row, "loads", "loaded", "pass"))
        else:
            error = str(libraries.get(name) or "not tried")
            rows.append(CheckRow(row, "loads", "not loaded", "fail",
                                 f"TensorFlow's loader needs {name}: {error}"))
    return rows


def _devices_row(report: Mapping[str, Any], section: Mapping[str, Any], device: str,
                 gpu_expected: bool) -> CheckRow:
    devices = [d for d in _list(section.get("devices")) if isinstance(d, Mapping)]
    names = ", ".join(str(d.get("name")) for d in devices) or "none"
    wanted = "CPU and GPU" if device == "cuda" and gpu_expected else "CPU"
    if not devices:
        error = section.get("devices_error") or _map(report.get("import_errors")).get(
            "tensorflow") or "TensorFlow listed no device"
        return CheckRow("tensorflow.devices", wanted, "none", "fail", str(error))
    types = {str(d.get("type")) for d in devices}
    if "CPU" not in types:
        return CheckRow("tensorflow.devices", wanted, names, "fail", "no CPU device listed")
    if wanted == "CPU and GPU" and "GPU" not in types:
        return CheckRow("tensorflow.devices", wanted, names, "fail",
                        "TensorFlow lists no GPU: its GPU build found no usable CUDA 10.0 "
                        "runtime or driver (see the tensorflow.library rows)")
    return CheckRow("tensorflow.devices", wanted, names, "pass")

"""Verify's Theano rows: flags as Theano sees them, its BLAS, and cuDNN as the flags mean it.

Read from the probe's ``theano`` and ``blas`` sections as defensively as the core reads
the rest: a missing or malformed field is a failing row, never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from envforge.knowledge import UnknownFactError, cudnn_major, cudnn_version_code
from envforge.lockfile import Expectations
from envforge.packs.theano.expect import theano_expect
from envforge.packs.theano.knowledge import theano_rules
from envforge.packs.theano.knowledge_models import CudnnRuleRow
from envforge.verify import CheckRow
from envforge.verify.untrusted import _list, _map, _show

# dnn.enabled as Theano spells it (case-sensitive there) from the spellings a lock may hold.
_DNN_SPELLING = {"false": "False", "disabled": "False", "true": "True", "enabled": "True"}


def probe_request(expect: Expectations) -> dict[str, Any]:
    return {"flags": sorted({flag_name(k) for k in theano_expect(expect).flags})}


def verify_rows(report: Mapping[str, Any], expect: Expectations, *, prefix: str | None,
                gpu_expected: bool) -> list[CheckRow]:
    rows = _config_rows(report, expect, prefix)
    if not expect.device.startswith("cpu") or expect.cudnn is not None:
        rows.append(_cudnn_row(report, expect, gpu_expected))
    return rows


def flag_name(name: str) -> str:
    """Theano 1.1 spells ``blas.ldflags`` as ``blas__ldflags``; rows use the dotted form."""
    return name.replace("__", ".")


def _config_rows(report: Mapping[str, Any], expect: Expectations,
                 prefix: str | None) -> list[CheckRow]:
    theano = report.get("theano")
    if not isinstance(theano, Mapping):
        error = str(_map(report.get("import_errors")).get("theano") or
                    "no theano section in the report")
        names = ["device", "floatX", *(flag_name(k) for k in theano_expect(expect).flags
                                       if flag_name(k) not in ("device", "floatX"))]
        return [CheckRow(_flag_row(n), _expected_flag(expect, n, prefix), "theano not imported",
                         "fail", error) for n in names]
    config = _map(theano.get("config"))
    config_errors = _map(theano.get("config_errors"))
    rows = [
        _compare_flag("device", expect.device, config, config_errors),
        _compare_flag("floatX", expect.float_x, config, config_errors),
    ]
    for raw_name in sorted(theano_expect(expect).flags, key=flag_name):
        name = flag_name(raw_name)
        if name in ("device", "floatX"):
            continue
        wanted = theano_expect(expect).flags[raw_name]
        if "{prefix}" in wanted:
            if prefix is None:
                rows.append(CheckRow(_flag_row(name), wanted, str(config.get(name)), "skip",
                                     "the flag names the environment's folder; none was given"))
                continue
            wanted = wanted.replace("{prefix}", prefix)
        rows.append(_compare_flag(name, wanted, config, config_errors))
    ldflags = _expected_flag(expect, "blas.ldflags", prefix)
    rows.append(_blas_row(report, asked=bool(ldflags)))
    return rows


def _flag_row(name: str) -> str:
    return name if name in ("device", "floatX") else f"flag.{name}"


def _expected_flag(expect: Expectations, name: str, prefix: str | None) -> str:
    if name == "device":
        return expect.device
    if name == "floatX":
        return expect.float_x
    for raw, value in theano_expect(expect).flags.items():
        if flag_name(raw) == name:
            return value if prefix is None else value.replace("{prefix}", prefix)
    return ""


def _compare_flag(name: str, wanted: str, config: Mapping[str, Any],
                  errors: Mapping[str, Any]) -> CheckRow:
    row = _flag_row(name)
    if name not in config:
        why = str(errors.get(name) or "Theano does not report this flag")
        return CheckRow(row, wanted, "missing", "fail", why)
    found = config[name]
    if _same_flag_value(wanted, found):
        return CheckRow(row, wanted, _show(found), "pass")
    return CheckRow(row, wanted, _show(found), "fail",
                    f"Theano sees {name}={_show(found)!s}; check THEANO_FLAGS and the "
                    "config files in the report")


def _same_flag_value(wanted: str, found: Any) -> bool:
    """Compare as Theano would parse: booleans and numbers by value, text without spacing."""
    if isinstance(found, bool):
        return wanted.strip().lower() in (("true", "1") if found else ("false", "0"))
    if isinstance(found, int | float):
        try:
            return math.isclose(float(wanted), float(found), rel_tol=1e-9)
        except ValueError:
            return False
    return " ".join(wanted.split()) == " ".join(str(found).split())


def _blas_row(report: Mapping[str, Any], *, asked: bool) -> CheckRow:
    """The C BLAS Theano's GEMMs link. Asked for (blas.ldflags in the spec: init's Theano
    specs on linux-64 link Debian's OpenBLAS): none fails. Not asked for (init's on win-64,
    a spec the flags were taken out of): one Theano found by itself passes (NumPy's
    blas_opt_info on Windows), and none is said, not failed: the GEMMs then call NumPy's C
    API, slower, and Theano warns so at each import."""
    blas = _map(report.get("blas"))
    implementation = blas.get("implementation")
    found = f"{implementation} {blas.get('libraries') or ''}".strip()
    expected = "C BLAS through blas.ldflags" if asked else "a C BLAS Theano finds by itself"
    if implementation == "c-blas" and blas.get("libraries") and blas.get("links") is not False:
        return CheckRow("blas", expected, found, "pass")
    if not asked:
        return CheckRow("blas", expected, found, "skip", "none: Theano's GEMMs call NumPy's "
                        "C API (slower; Theano warns at each import); set [theano] "
                        "blas_ldflags to link one, as specs/theano-cpu.toml links Debian's "
                        "OpenBLAS")
    why = str(blas.get("error") or ("Theano's own test of blas.ldflags (a ddot_ call "
                                    "compiled, linked and run with them) failed: a library "
                                    "or folder they name is missing"
                                    if blas.get("links") is False
                                    else "Theano's GEMMs do not link a BLAS library"))
    return CheckRow("blas", expected, found or "unknown", "fail", why)


def _cudnn_row(report: Mapping[str, Any], expect: Expectations,
               gpu_expected: bool) -> CheckRow:
    """cuDNN as the flags mean it; Theano 1.0.x's dnn ops do not build with cuDNN >= 8."""
    raw_flag = next((v for k, v in theano_expect(expect).flags.items()
                     if flag_name(k) == "dnn.enabled"), "auto")
    dnn_flag = _DNN_SPELLING.get(raw_flag.strip().lower(), raw_flag)
    gpu = _map(report.get("gpu"))
    present, version = gpu.get("dnn_present"), gpu.get("dnn_version")
    found_text = (f"cuDNN {version}" if isinstance(version, int) else
                  f"not present ({gpu.get('dnn_msg') or 'not checked'})")
    theano = str(expect.versions.get("theano") or _map(report.get("versions")).get("theano"))
    code = _cudnn_code(version, expect.cudnn)
    # What Theano really runs with: THEANO_FLAGS or another .theanorc can override the lock.
    seen = _map(_map(report.get("theano")).get("config")).get("dnn.enabled")
    effective = _DNN_SPELLING.get(str(seen).strip().lower(), str(seen)) if seen else dnn_flag
    rule = _conv_rule(theano)
    if effective != "False" and rule is not None and code is not None \
            and code >= rule.version_code:
        return CheckRow("cudnn", f"cuDNN below {rule.version_code} for Theano {theano}",
                        f"cuDNN major {cudnn_major(code)}", "fail",
                        f"Theano {theano} with cuDNN {code}: {rule.effect}; set dnn.enabled = "
                        f"False or use cuDNN 7.6.5 (source: {rule.source})")
    if not gpu_expected:
        return CheckRow("cudnn", expect.cudnn or f"dnn.enabled={dnn_flag}", "-", "skip",
                        "no GPU on this run")
    if dnn_flag == "False":
        dnn_ops = sorted({str(op) for k in _list(report.get("kernels")) if isinstance(k, Mapping)
                          for op in _list(k.get("ops")) if str(op).startswith("GpuDnn")})
        if present is True or dnn_ops:
            return CheckRow("cudnn", "disabled", ", ".join(dnn_ops) or found_text, "fail",
                            "dnn.enabled=False, yet Theano uses cuDNN")
        return CheckRow("cudnn", "disabled", "not used", "pass")
    wanted = cudnn_version_code(expect.cudnn) if expect.cudnn else None
    if present is not True:
        if dnn_flag == "True" or wanted is not None:
            return CheckRow("cudnn", expect.cudnn or "present", found_text, "fail",
                            f"cuDNN is not usable: {gpu.get('dnn_msg') or 'unknown reason'}")
        return CheckRow("cudnn", f"dnn.enabled={dnn_flag}", found_text, "pass")
    if wanted is not None and isinstance(version, int) and version // 100 != wanted // 100:
        return CheckRow("cudnn", f"{expect.cudnn} ({wanted})", found_text, "fail",
                        f"Theano loads cuDNN {version}, the lock says {expect.cudnn}")
    return CheckRow("cudnn", expect.cudnn or f"dnn.enabled={dnn_flag}", found_text, "pass")


def _cudnn_code(found: Any, locked: str | None) -> int | None:
    """The version code Theano compares cuDNN by: the one it reported, else the locked one's."""
    if isinstance(found, int) and found > 0:
        return found
    return cudnn_version_code(locked) if locked else None


def _conv_rule(theano: str) -> CudnnRuleRow | None:
    """The knowledge base's "conv ops fail to compile from cuDNN X" rule for a release."""
    try:
        rules = theano_rules(theano)
    except UnknownFactError:
        return None
    return next((row for row in rules.cudnn if row.kind == "conv-fails-from"), None)

"""The Theano probe's sections: what Theano saw of its configuration, BLAS, GPU and cuDNN,
and what nvidia-smi says; run by the environment's Python (3.5 grammar), never judged here.
Every failure is caught into the section as a string."""

import logging
import os
import re
import shutil
import subprocess
import sys

from proberuntime import error_text


class LogCapture(logging.Handler):
    """Keeps Theano's log records: a GPU init failure is only ever logged, never raised."""

    def __init__(self):
        logging.Handler.__init__(self, level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)

    def lines(self):
        out = []
        for record in self.records:
            line = "%s %s: %s" % (record.levelname, record.name, record.getMessage())
            if record.exc_info and record.exc_info[1] is not None:
                line += " (%s)" % error_text(record.exc_info[1])
            out.append(line)
        return out

    def gpu_init_error(self):
        """The last GPU-back-end error Theano logged, with the exception that caused it."""
        found = None
        for record in self.records:
            if record.name.startswith("theano.gpuarray") and record.levelno >= logging.ERROR:
                found = record.getMessage()
                if record.exc_info and record.exc_info[1] is not None:
                    found += ": " + error_text(record.exc_info[1])
        return found


def _config_value(config, name):
    """A Theano flag by its dotted name; 1.1 spells nested flags with ``__``."""
    try:
        value = config
        for part in name.split("."):
            value = getattr(value, part)
    except AttributeError:
        value = getattr(config, name.replace(".", "__"))
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return str(value)


def theano_section(theano, flags, log):
    config = theano.config
    values, errors = {}, {}
    for name in flags:
        try:
            values[name] = _config_value(config, name)
        except Exception as exc:
            errors[name] = error_text(exc)
    try:
        from theano import configparser
        files = list(configparser.config_files)
    except Exception:
        raw = os.environ.get("THEANORC", "~/.theanorc")
        files = [os.path.expanduser(p) for p in raw.split(os.pathsep)]
    return {
        "config": values,
        "config_errors": errors,
        "config_files": [{"path": p, "exists": os.path.isfile(p)} for p in files],
        "theanorc_env": os.environ.get("THEANORC"),
        "theano_flags_env": os.environ.get("THEANO_FLAGS"),
        "log": log.lines(),
    }


def blas_section(theano, numpy):
    out = {"ldflags": None, "libraries": None, "implementation": None, "error": None,
           "numpy_blas": None, "links": None}
    if numpy is not None:
        info = getattr(getattr(numpy, "__config__", None), "blas_opt_info", None)
        if isinstance(info, dict):
            out["numpy_blas"] = list(info.get("libraries", []))
    if theano is None:
        return out
    try:
        import theano.tensor.blas as blas
        out["ldflags"] = str(theano.config.blas.ldflags)
        out["libraries"] = list(blas.ldflags())
        # Without ldflags Theano's Gemm/Dot22 C code calls NumPy's C API instead of BLAS.
        out["implementation"] = "c-blas" if theano.config.blas.ldflags else "numpy-c-api"
        if theano.config.blas.ldflags:
            # Theano's own test of flags: a ddot_ call compiled, linked and run with them
            # (configdefaults.try_blas_flag; "" when it fails). Set flags are not tested by
            # Theano itself, so a library they name that is gone fails only at the first GEMM.
            from theano.configdefaults import try_blas_flag
            out["links"] = bool(try_blas_flag(str(theano.config.blas.ldflags).split()))
    except Exception as exc:
        out["error"] = error_text(exc)
    return out


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None if value is None else str(value)


def gpu_section(theano, log, pygpu_error):
    out = {"pygpu_activated": None, "init_error": None, "devname": None, "bin_id": None,
           "compute_capability": None, "total_gmem": None, "dnn_present": None,
           "dnn_msg": None, "dnn_version": None, "error": None}
    if theano is None:
        return out
    # Theano imports its GPU back-end itself when the device asks for one; importing it
    # here on a CPU device could only add errors the configuration never triggers.
    gpuarray = sys.modules.get("theano.gpuarray")
    if gpuarray is None:
        out["pygpu_activated"] = False
        out["dnn_msg"] = "not checked: theano.gpuarray was not imported (device is cpu)"
        return out
    out["pygpu_activated"] = bool(getattr(gpuarray, "pygpu_activated", False))
    init_error = log.gpu_init_error()
    if pygpu_error and (init_error is None or "could not be imported" in init_error):
        init_error = "pygpu import failed: " + pygpu_error
    out["init_error"] = init_error
    if not out["pygpu_activated"]:
        out["dnn_msg"] = "not checked: the GPU back-end is not active"
        return out
    try:
        context = gpuarray.type.get_context(None)
        out["devname"] = _text(context.devname)
        out["bin_id"] = _text(context.bin_id)
        out["total_gmem"] = int(context.total_gmem)
        match = re.search(r"(\d+)(\d)$", out["bin_id"] or "")
        if match:
            out["compute_capability"] = "%s.%s" % (match.group(1), match.group(2))
    except Exception as exc:
        out["error"] = error_text(exc)
    try:
        from theano.gpuarray import dnn
        out["dnn_present"] = bool(dnn.dnn_present())
        out["dnn_msg"] = _text(dnn.dnn_present.msg)
        if out["dnn_present"]:
            out["dnn_version"] = int(dnn.version())
    except Exception as exc:
        out["dnn_msg"] = (out["dnn_msg"] or "") + " error: " + error_text(exc)
    return out


def nvidia_section():
    out = {"driver_version": None, "cuda_version": None, "gpus": [], "error": None}
    smi = shutil.which("nvidia-smi")
    if smi is None:
        out["error"] = "nvidia-smi not on PATH"
        return out
    try:
        query = subprocess.run(
            [smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            timeout=30)
        header = subprocess.run([smi], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=30)
    except Exception as exc:
        out["error"] = error_text(exc)
        return out
    if query.returncode != 0:
        out["error"] = (query.stderr or query.stdout).strip() or "nvidia-smi failed"
        return out
    for line in query.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2:
            out["gpus"].append(parts[0])
            out["driver_version"] = parts[1]
    match = re.search(r"CUDA Version:\s*([0-9.]+)", header.stdout)
    if match:
        out["cuda_version"] = match.group(1)
    return out

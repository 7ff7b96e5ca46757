"""The probe runtime every pack's probe imports and is started by: its source and every
probe's are Python 3.5 grammar; every probe, the Theano one with its parts, runs under real
Pythons 3.6 (the oldest here) to 3.12 with nothing installed, and in isolated mode (as an
embeddable Python's ._pth runs it), and still answers one JSON report; the kernels' inputs
are the very draws of envforge/expectations/."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import numpy as np
import pytest

from envforge.errors import StepError
from envforge.expectations import KERNEL_SHAPES, kernel_inputs
from envforge.host import proc
from envforge.host.interpreters import find_interpreter
from envforge.lockfile import ConvParams
from envforge.probes import RUNTIME, probe_command
from tests.testing.probes import load_probe

PACKS = Path(__file__).resolve().parents[2] / "envforge" / "packs"
PROBE_FILES = sorted(PACKS.glob("*/probe*.py"))
PROBES = sorted(PACKS.glob("*/probe.py"))


@pytest.mark.parametrize("path", [RUNTIME, *PROBE_FILES],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_source_is_python_3_5(path: Path) -> None:
    ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 5))


def test_every_pack_s_probe_and_theano_s_parts_are_checked() -> None:
    names = {f"{p.parent.name}/{p.name}" for p in PROBE_FILES}
    assert {"theano/probe.py", "theano/probe_kernels.py", "theano/probe_sections.py",
            "theano/probe_gemm.py", "keras/probe.py", "tensorflow/probe.py",
            "torch/probe.py"} <= names
    with pytest.raises(SyntaxError):
        ast.parse('x = f"{1}"', feature_version=(3, 5))


def _python(version: str) -> str:
    try:
        return str(find_interpreter(version).executable)
    except StepError:
        pytest.skip(f"no Python {version} here")


@pytest.mark.parametrize(("version", "isolated"), [("3.6", False), ("3.7", True),
                                                  ("3.12", False)])
def test_each_probe_answers_under_a_bare_python(version: str, isolated: bool,
                                                tmp_path: Path) -> None:
    """No framework installed: each probe reports the imports it could not make and still
    ends with one JSON report on stdout, exit 0; a bad request is exit 2 with its error.
    Isolated (-I: no script folder, no PYTHONPATH on sys.path) the runtime still finds
    itself and the probe's parts."""
    python = [_python(version), *(["-I"] if isolated else [])]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HOME=str(tmp_path))
    request = {"kernels": [], "distributions": ["no-such-distribution"]}
    for probe in PROBES:
        argv = [*python, *probe_command(python[0], probe)[1:]]
        done = proc.run(argv, env=env, input_text=json.dumps(request), check=False,
                        cwd=tmp_path, timeout=120)
        assert done.returncode == 0, (probe, done.stderr)
        report = json.loads(done.stdout)
        assert report["format"] == 1 and "error" not in report, probe
        assert report["python"]["version"].startswith(version + ".")
        assert report["versions"] and not any(report["versions"].values()), probe
        assert set(report["import_errors"]) == set(report["versions"])
    done = proc.run([*python, *probe_command(python[0], PROBES[0])[1:]], env=env,
                    input_text="[1, 2", check=False, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and "JSONDecodeError" in json.loads(done.stdout)["error"]


def test_the_report_is_strict_json_whatever_the_probe_prints(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\nimport proberuntime\n\n\ndef probe(request):\n"
                     "    print('noise on stdout')\n"
                     "    return {'format': 1, 'nan': float('nan'), 'deep': [{'inf': 1e999}],"
                     " 'echo': request, 'found': proberuntime.distribution_versions("
                     "['PIP', 'no-such-distribution'])}\n\n\n"
                     "if __name__ == '__main__':\n    sys.exit(proberuntime.main(probe))\n",
                     encoding="utf-8")
    done = proc.run(probe_command(_python("3.6"), probe), input_text='{"a": 1}',
                    cwd=tmp_path, timeout=120)
    report = json.loads(done.stdout)
    found = report.pop("found")  # Python 3.6: read from the dist-info folders' names
    assert report.pop("elapsed_s") >= 0
    assert report == {"format": 1, "nan": None, "deep": [{"inf": None}], "echo": {"a": 1}}
    assert found["no-such-distribution"] is None and found["PIP"].split(".")[0].isdigit()
    assert "noise on stdout" in done.stderr


@pytest.mark.parametrize("float_x", ["float32", "float64"])
@pytest.mark.parametrize("name", ["elementwise", "gemm", "conv", *KERNEL_SHAPES])
def test_the_inputs_are_expectations_draws(name: str, float_x: str) -> None:
    """Theano's probe draws every kernel's inputs (the core's through the runtime, which
    the TensorFlow and PyTorch probes use too) exactly as the lock's references do."""
    kernels = load_probe(PACKS / "theano" / "probe_kernels.py")
    shape = KERNEL_SHAPES.get(name, {"elementwise": (50,), "gemm": (6, 6),
                                     "conv": (2, 3, 8, 8)}.get(name, ()))
    conv = ConvParams(channels=(3, 4, 2)) if name == "conv" else None
    request = {"name": name, "seed": 22, "shape": list(shape)}
    if conv is not None:
        request.update(channels=list(conv.channels), filter_size=conv.filter_size)
    drawn = kernels._inputs(np, request, float_x)
    expected = kernel_inputs(name, seed=22, shape=shape, float_x=float_x, conv=conv)
    assert len(drawn) == len(expected)
    for mine, theirs in zip(drawn, expected, strict=True):
        assert mine.shape == theirs.shape
        assert np.array_equal(mine.astype(np.float64), theirs)

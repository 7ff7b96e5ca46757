"""Values a spec may not hold (issue 10 #9, #12): refused at lock time, file:line:key, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.cli import main
from envforge.errors import SpecError
from envforge.spec import parse_spec
from tests.faults.harness import snapshot
from tests.testing.packs import REGISTRY

BASE = """\
[project]
name = "{name}"
platforms = ["linux-64"]

[python]
version = "{python}"

[environment]
kind = "venv"
{extra}
"""


def _spec(name: str = "x", python: str = "3.7", extra: str = "") -> str:
    return BASE.format(name=name, python=python, extra=extra)


CASES = {
    "name-300": (_spec(name="a" * 300), 2, "project.name"),
    "name-con": (_spec(name="con"), 2, "project.name"),
    "name-nul-ext": (_spec(name="nul.txt"), 2, "project.name"),
    "python-3.07": (_spec(python="3.07"), 6, "python.version"),
    "python-3.7.999999": (_spec(python="3.7.999999"), 6, "python.version"),
    "cuda-99999": (_spec(extra='[cuda]\nversion = "99999.0"\n'), 11, "cuda.version"),
    "seed-negative": (_spec(extra="[verify]\nseed = -1\n"), 11, "verify.seed"),
    "seed-2-32": (_spec(extra="[verify]\nseed = 4294967296\n"), 11, "verify.seed"),
    "repeats-1e12": (_spec(extra="[verify]\nrepeats = 1000000000000\n"), 11, "verify.repeats"),
    "rtol-inf": (_spec(extra="[verify]\nrtol = inf\n"), 11, "verify.rtol"),
    "speedup-inf": (_spec(extra="[verify]\nmin_gpu_speedup = inf\n"), 11,
                    "verify.min_gpu_speedup"),
    "gemm-huge": (_spec(extra="[verify]\ngemm_size = 1000000\n"), 11, "verify.gemm_size"),
    "preallocate-nan": (_spec(extra="[theano]\npreallocate = nan\n"), 11, "theano.preallocate"),
    "preallocate-minus-5": (_spec(extra="[theano]\npreallocate = -5\n"), 11,
                            "theano.preallocate"),
    "preallocate-1e308": (_spec(extra="[theano]\npreallocate = 1e308\n"), 11,
                          "theano.preallocate"),
    "ldflags-newline": (_spec(extra='[theano]\nblas_ldflags = "-lblas\\n[global]"\n'), 11,
                        "theano.blas_ldflags"),
    "flag-global": (_spec(extra='[theano]\nflags = { "global.device" = "cuda" }\n'), 11,
                    "theano.flags"),
}
# Issue 29 #10: values that were accepted. Numbers and booleans are strict (no "2" for 2).
REFUSED = {
    "env-name-dotdot": (_spec(extra='name = "../../escape"\n'), 10, "environment.name",
                        "invalid value '../../escape'"),
    "env-name-absolute": (_spec(extra='name = "/tmp/abs-env"\n'), 10, "environment.name",
                          "invalid value '/tmp/abs-env'"),
    "env-name-slash": (_spec(extra='name = "a/b"\n'), 10, "environment.name", "'a/b'"),
    "env-name-empty": (_spec(extra='name = ""\n'), 10, "environment.name", "invalid value ''"),
    "triple-equals": (_spec(extra='[pypi]\npackages = ["six", "numpy===1.19.5"]\n'), 11,
                      "pypi.packages.1", "'numpy===1.19.5': '===' compares the version's text"),
    "not-pep508": (_spec(extra='[pypi]\npackages = ["numpy=1.19.5"]\n'), 11, "pypi.packages.0",
                   "not a requirement (PEP 508)"),
    "marker-excludes": (_spec(extra='[pypi]\npackages = ["six; python_version<\'3\'"]\n'), 11,
                        "pypi.packages.0", "excludes it on the environment's Python 3.7, so it "
                        "would never be installed; fix: remove the line"),
    "marker-full-excludes": (_spec(python="3.7.16", extra='[pypi]\npackages = '
                                   '["six; python_full_version>=\'3.8\'"]\n'), 11,
                             "pypi.packages.0", "fix: remove the line"),
    # the refused pin's own line inside a multi-line array, not the line of ``packages = [``
    "triple-equals-own-line": (_spec(extra='[pypi]\npackages = [\n  "six",  # ok\n'
                                     '  "numpy===1.19.5",\n]\n'), 13, "pypi.packages.1",
                               "'numpy===1.19.5'"),
    "marker-on-platform-line": (_spec(extra='[pypi]\npackages = ["six"]\n'
                                      '[pypi.platform.linux-64]\npackages = [\n  "h5py",\n'
                                      '  "attrs; python_version<\'3\'",\n]\n'), 15,
                                "pypi.platform.linux-64.packages.1", "excludes it"),
    "compiler-minus-1": (_spec(extra='[compiler]\nkind = "gcc"\nversion = "-1"\n'), 12,
                         "compiler.version", "invalid value '-1'"),
    "device-cuda99999": (_spec(extra='[theano]\ndevice = "cuda99999"\n'), 11, "theano.device",
                         "invalid value 'cuda99999'"),
    "device-opencl": (_spec(extra='[theano]\ndevice = "opencl0:0"\n'), 11, "theano.device",
                      "invalid value 'opencl0:0'"),
    "log-level-string": (_spec(extra='[tensorflow]\nlog_level = "2"\n'), 11,
                         "tensorflow.log_level", 'invalid value "2": Input should be a valid '
                         "integer (a TOML value, not a string)"),
    "log-level-bool": (_spec(extra="[tensorflow]\nlog_level = true\n"), 11,
                       "tensorflow.log_level", "invalid value true"),
    "allow-growth-yes": (_spec(extra='[tensorflow]\nallow_growth = "yes"\n'), 11,
                         "tensorflow.allow_growth", 'invalid value "yes"'),
    "epsilon-string": (_spec(extra='[keras]\nepsilon = "1e-7"\n'), 11, "keras.epsilon",
                       'invalid value "1e-7"'),
    "allow-gc-string": (_spec(extra='[theano]\nallow_gc = "false"\n'), 11, "theano.allow_gc",
                        'invalid value "false"'),
    "seed-string": (_spec(extra='[verify]\nseed = "22"\n'), 11, "verify.seed",
                    'invalid value "22"'),
}
for _case, (_text, _line, _key, _) in REFUSED.items():
    CASES[_case] = (_text, _line, _key)
for _channels in ("[]", "[3]", "[3, 0]", "[3, -1]", "[3, 100000]"):
    CASES[f"channels-{_channels}"] = (_spec(extra=f"[verify]\nconv = {{ channels = {_channels} "
                                            "}\n"), 11, "verify.conv.channels")


@pytest.mark.parametrize("case", sorted(CASES))
def test_out_of_range_values_name_file_line_and_key(case: str) -> None:
    text, line, key = CASES[case]
    with pytest.raises(SpecError) as raised:
        parse_spec(text, source="s.toml", registry=REGISTRY)
    assert raised.value.line == line
    assert raised.value.key is not None and raised.value.key.startswith(key)
    assert "\n" not in str(raised.value)


def test_deep_nesting_is_one_error_not_a_recursion_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "deep.toml"
    spec.write_text(_spec() + "x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert main(["lock", str(spec)]) == 2
    assert "nested too deeply" in capsys.readouterr().err


def test_lock_refuses_a_bad_value_with_exit_2(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(CASES["seed-negative"][0])
    assert main(["lock", str(spec), "--locks-dir", str(tmp_path / "locks")]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:11: verify.seed: " in err and err.count("\n") == 1
    assert not (tmp_path / "locks").exists()


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_lock_refuses_what_was_accepted_in_one_line_changing_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        case: str) -> None:
    text, line, key, words = REFUSED[case]
    for name in ("home", "envforge-home"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "envforge-home"))
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    before = snapshot(tmp_path)
    assert main(["lock", str(spec), "--locks-dir", str(tmp_path / "locks")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {spec}:{line}: {key}: ") and err.count("\n") == 1, err
    assert words in err and "Traceback" not in err and "unexpected error" not in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("extra", ['name = "theano-cuda102"\n',
                                   '[pypi]\npackages = ["six; python_version>=\'3\'", '
                                   '"pywin32; sys_platform==\'win32\'"]\n',
                                   '[theano]\ndevice = "cuda1"\n',
                                   '[compiler]\nkind = "mingw-w64"\nversion = "8.1.0"\n',
                                   "[verify]\nrtol = 1\n"])
def test_values_that_stay_accepted(extra: str) -> None:
    parse_spec(_spec(extra=extra), source="s.toml", registry=REGISTRY)

"""Values a spec may not hold (issue 10 #9, #12): refused at lock time, file:line:key, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.cli import main
from envforge.errors import SpecError
from envforge.spec import parse_spec

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
for _channels in ("[]", "[3]", "[3, 0]", "[3, -1]", "[3, 100000]"):
    CASES[f"channels-{_channels}"] = (_spec(extra=f"[verify]\nconv = {{ channels = {_channels} "
                                            "}\n"), 11, "verify.conv.channels")


@pytest.mark.parametrize("case", sorted(CASES))
def test_out_of_range_values_name_file_line_and_key(case: str) -> None:
    text, line, key = CASES[case]
    with pytest.raises(SpecError) as raised:
        parse_spec(text, source="s.toml")
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

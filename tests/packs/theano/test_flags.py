"""Rendering Theano's flags: .theanorc and THEANO_FLAGS in the locked release's spelling."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path
from typing import Literal

import pytest

from envforge.errors import InputError
from envforge.packs.theano.flags import (
    field_flags,
    parse_theanorc,
    render_theano_flags_env,
    render_theanorc,
    theano_flags,
)
from envforge.packs.theano.section import TheanoSection, theano_section
from envforge.spec import Platform, load_spec
from tests.testing.packs import REGISTRY

SPECS = Path(__file__).resolve().parents[3] / "specs"


def _theano(spec: str, platform: Platform) -> TheanoSection:
    return theano_section(load_spec(SPECS / f"{spec}.toml", REGISTRY).for_platform(platform))


def _theano_reads_flags(value: str) -> dict[str, str]:
    """THEANO_FLAGS split as Theano-PyMC 1.0.5 and 1.1.2 do (configparser.parse_config_string)."""
    splitter = shlex.shlex(value, posix=True)
    splitter.whitespace = ","
    splitter.whitespace_split = True
    pairs = (pair.strip().split("=", 1) for pair in splitter if pair.strip())
    return {k: v for k, v in pairs}


def _theano_reads_theanorc(text: str, key: str, separator: str) -> str:
    """One flag looked up as Theano's fetch_val_for_key does: split at the last separator."""
    parser = configparser.RawConfigParser()
    parser.read_string(text)
    section, sep, option = key.rpartition(separator)
    return parser.get(section if sep else "global", option)


def test_reference_spec_windows_theanorc_for_1_0_5() -> None:
    flags = theano_flags(_theano("theano-cuda102", "win-64"), "1.0.5", "C:/envs/x")
    text = render_theanorc(flags, "1.0.5")
    assert "[gpuarray]\npreallocate = 0.8\n" in text
    assert "[dnn]\nenabled = True\n" in text
    assert "[global]\n" in text and "\ndevice = cuda\n" in text
    assert "\nfloatX = float32\n" in text
    assert text.startswith("# Written by envforge")
    assert "cnmem" not in text and "[cudnn]" not in text


def test_theanorc_reads_back_as_theano_reads_it() -> None:
    flags = theano_flags(_theano("theano-gpu-linux", "linux-64"), "1.0.5", "/envs/gpu")
    flags["dnn.conv.algo_fwd"] = "time_once"
    text = render_theanorc(flags, "1.0.5")
    for name, value in flags.items():
        assert _theano_reads_theanorc(text, name, ".") == value, name
    assert "[dnn.conv]\nalgo_fwd = time_once\n" in text
    assert parse_theanorc(text) == flags


def test_theanorc_for_1_1_2_names_nested_sections_its_way() -> None:
    flags = {"dnn.conv.algo_fwd": "time_once", "blas.ldflags": "-lopenblas", "device": "cuda"}
    text = render_theanorc(flags, "1.1.2")
    assert "[dnn__conv]\nalgo_fwd = time_once\n" in text
    assert "[blas]\nldflags = -lopenblas\n" in text
    for name, value in flags.items():
        assert _theano_reads_theanorc(text, name.replace(".", "__"), "__") == value
    assert parse_theanorc(text) == flags


def test_theanorc_order_is_deterministic() -> None:
    one = {"device": "cuda", "blas.ldflags": "-lblas", "allow_gc": "False"}
    two = dict(reversed(list(one.items())))
    assert render_theanorc(one, "1.0.5") == render_theanorc(two, "1.0.5")
    text = render_theanorc(one, "1.0.5")
    assert text.index("[global]") < text.index("[blas]")
    assert text.index("allow_gc") < text.index("device")


def test_theano_flags_env_spelling_follows_the_release() -> None:
    spec = TheanoSection(device="cuda", dnn="disabled", blas_ldflags="-L{prefix}/lib -lopenblas",
                         cxxflags="-I{prefix}/include")
    flags = theano_flags(spec, "1.1.2", "/envs/gpu")
    env = render_theano_flags_env(flags, "1.1.2")
    assert "blas__ldflags=-L/envs/gpu/lib -lopenblas" in env
    assert "gcc__cxxflags=-I/envs/gpu/include" in env and "dnn__enabled=False" in env
    assert "blas.ldflags" not in env
    old = render_theano_flags_env(flags, "1.0.5")
    assert "blas.ldflags=" in old and "__" not in old
    assert _theano_reads_flags(old) == flags
    assert _theano_reads_flags(env) == {name.replace(".", "__"): v for name, v in flags.items()}


def test_theano_flags_env_refuses_a_comma() -> None:
    flags = theano_flags(_theano("theano-gpu-linux", "linux-64"), "1.0.5", "/envs/gpu")
    with pytest.raises(InputError, match=r"blas\.ldflags=.*comma"):
        render_theano_flags_env(flags, "1.0.5")


def test_theano_flags_env_quotes_what_shlex_would_eat() -> None:
    flags = {"base_compiledir": "C:\\Users\\me\\Theano", "gcc.cxxflags": "-DX=\"a b\" #1",
             "cxx": "g++"}
    env = render_theano_flags_env(flags, "1.0.5")
    assert _theano_reads_flags(env) == flags


def test_prefix_is_substituted_and_unset_keys_omitted() -> None:
    linux = theano_flags(_theano("theano-cpu", "linux-64"), "1.0.5", "/envs/cpu")
    assert linux["blas.ldflags"].startswith("-L/envs/cpu/deb/usr/lib/")
    assert "{prefix}" not in "".join(linux.values())
    windows = theano_flags(_theano("theano-cpu", "win-64"), "1.0.5", "C:/envs/cpu")
    assert "blas.ldflags" not in windows
    assert "gpuarray.preallocate" not in windows and "cxx" not in windows
    assert windows["device"] == "cpu" and windows["floatX"] == "float64"


@pytest.mark.parametrize(("dnn", "value"), [
    ("enabled", "True"), ("disabled", "False"), ("auto", "auto"), ("no_check", "no_check"),
])
def test_dnn_values_are_theanos_case_sensitive_ones(
        dnn: Literal["auto", "enabled", "disabled", "no_check"], value: str) -> None:
    assert field_flags(TheanoSection(dnn=dnn))["dnn.enabled"] == value


def test_extra_flags_are_added_in_dotted_form() -> None:
    spec = TheanoSection(flags={"gpuarray__sched": "multi", "dnn.conv.algo_fwd": "{prefix}/x"})
    flags = theano_flags(spec, "1.1.2", "/p")
    assert flags["gpuarray.sched"] == "multi" and flags["dnn.conv.algo_fwd"] == "/p/x"


def test_extra_flags_cannot_repeat_a_theano_key() -> None:
    with pytest.raises(InputError, match=r"\[theano\] device"):
        theano_flags(TheanoSection(flags={"device": "cuda"}), "1.0.5", "/p")
    with pytest.raises(InputError, match="twice"):
        theano_flags(TheanoSection(flags={"gpuarray.sched": "multi", "gpuarray__sched": "single"}),
                     "1.1.2", "/p")


@pytest.mark.parametrize("value", ["a\nb", " lead", "%(USER)s/x", "50%%"])
def test_theanorc_refuses_values_configparser_would_change(value: str) -> None:
    with pytest.raises(InputError):
        render_theanorc({"base_compiledir": value}, "1.0.5")


def test_parse_theanorc_names_as_theano_reads_them() -> None:
    text = ("[global]\nFLOATX = float32\ndevice=cuda0\n\n[lib]\ncnmem = 0.8\n\n"
            "[NanGuardMode]\nNAN_is_error = True\n\n[Blas]\nldflags = -lblas\n")
    assert parse_theanorc(text) == {
        "floatX": "float32", "device": "cuda0", "lib.cnmem": "0.8",
        "NanGuardMode.nan_is_error": "True", "Blas.ldflags": "-lblas",
    }


def test_parse_theanorc_keeps_percent_raw_and_default_apart() -> None:
    text = "[DEFAULT]\nx = 1\n\n[global]\nbase_compiledir = %LOCALAPPDATA%\\Theano\n"
    assert parse_theanorc(text) == {"DEFAULT.x": "1",
                                    "base_compiledir": "%LOCALAPPDATA%\\Theano"}


@pytest.mark.parametrize("text", ["device = cuda\n", "[global]\ndevice = a\ndevice = b\n"])
def test_parse_theanorc_refuses_what_theano_cannot_read(text: str) -> None:
    with pytest.raises(InputError, match=r"^\.theanorc: "):
        parse_theanorc(text)

"""Spec errors name file, line and key; platform tables merge; the hash follows the content."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.errors import ExitCode, SpecError
from envforge.packs.theano.section import theano_section
from envforge.spec import load_spec, parse_spec
from tests.testing.packs import REGISTRY

SPECS = Path(__file__).resolve().parents[2] / "specs"

MINIMAL = """\
[project]
name = "demo"
platforms = ["linux-64", "win-64"]

[python]
version = "3.7"

[environment]
kind = "venv"

[pypi]
packages = ["numpy==1.19.5"]

[pypi.platform.win-64]
packages = ["pywin32==228"]

[theano]
device = "cpu"
floatX = "float32"

[theano.platform.win-64]
device = "cuda"
"""


def error_of(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_spec(text, source="specs/demo.toml", registry=REGISTRY)
    assert info.value.exit_code == ExitCode.BAD_INPUT
    return info.value


def test_reference_specs_load() -> None:
    for path in sorted(SPECS.glob("*.toml")):
        spec = load_spec(path, REGISTRY)
        assert spec.name == path.stem
        assert spec.content_hash.startswith("sha256:")


def test_platform_tables_override_and_packages_add() -> None:
    spec = parse_spec(MINIMAL, source="demo.toml", registry=REGISTRY)
    linux, win = spec.for_platform("linux-64"), spec.for_platform("win-64")
    assert linux.pypi.packages == ("numpy==1.19.5",)
    assert win.pypi.packages == ("numpy==1.19.5", "pywin32==228")
    assert (theano_section(linux).device, theano_section(win).device) == ("cpu", "cuda")
    assert theano_section(win).float_x == "float32"


def test_unknown_key_names_line_and_key() -> None:
    error = error_of(MINIMAL.replace('device = "cpu"', 'device = "cpu"\ncnmem = 0.8'))
    assert (error.line, error.key) == (19, "theano.cnmem")
    assert str(error) == "specs/demo.toml:19: theano.cnmem: unknown key"
    assert "\n" not in str(error)


def test_bad_value_in_platform_table_points_at_that_table() -> None:
    error = error_of(MINIMAL.replace('device = "cuda"', 'device = "gpu"'))
    assert error.key == "theano.platform.win-64.device"
    assert error.line == 22
    assert "'gpu'" in str(error)


@pytest.mark.parametrize(("line", "key", "why"), [
    ('index = "http://[::1/simple"', "pypi.index", "is not a URL: Invalid IPv6 URL"),
    ('find_links = ["./wheels", "http://h.example:port/w.html"]', "pypi.find_links.1",
     "is not a URL: Port could not be cast to integer value as 'port'"),
    ('extra_indexes = ["https:///simple"]', "pypi.extra_indexes.0", "names no host"),
])
def test_an_index_or_page_that_is_no_url_names_its_line_and_key(line: str, key: str,
                                                                 why: str) -> None:
    """A malformed index URL had reached uv, which exited with its own words (lock exit 1);
    a local folder of find-links stays."""
    error = error_of(MINIMAL.replace('packages = ["numpy==1.19.5"]\n',
                                     f'packages = ["numpy==1.19.5"]\n{line}\n', 1))
    assert (error.line, error.key) == (13, key)
    assert why in str(error) and "\n" not in str(error)


def test_toml_syntax_error_has_a_line() -> None:
    error = error_of(MINIMAL.replace('kind = "venv"', 'kind = venv'))
    assert error.line == 9
    assert "TOML syntax error" in str(error)


def test_missing_required_key() -> None:
    error = error_of(MINIMAL.replace('version = "3.7"\n', ""))
    assert error.key == "python.version"
    assert "required" in str(error)


def test_unknown_platform_and_section() -> None:
    assert error_of(MINIMAL.replace("[theano.platform.win-64]", "[theano.platform.osx-64]")).key \
        == "theano.platform.osx-64"
    assert error_of(MINIMAL + "\n[cudnnn]\nversion = '7'\n").key == "cudnnn"


def test_hash_ignores_comments_but_follows_values() -> None:
    base = parse_spec(MINIMAL, source="a", registry=REGISTRY).content_hash
    assert parse_spec("# a comment\n" + MINIMAL, source="b", registry=REGISTRY).content_hash == base
    assert parse_spec(MINIMAL.replace("1.19.5", "1.19.4"), source="c",
                      registry=REGISTRY).content_hash != base


def test_missing_file() -> None:
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec("does/not/exist.toml", REGISTRY)


def test_a_lock_given_for_a_spec_names_the_spec_it_was_locked_from() -> None:
    lock = Path(__file__).resolve().parents[2] / "locks" / "theano-cpu.lock"
    with pytest.raises(SpecError) as info:
        load_spec(lock, REGISTRY)
    assert info.value.exit_code == ExitCode.BAD_INPUT
    assert str(info.value) == (
        f"{lock}:4: meta: this is a lock (`envforge lock` wrote it), not a spec: give the "
        "spec it was locked from (specs/theano-cpu.toml): commands take the spec and find "
        "its lock themselves")

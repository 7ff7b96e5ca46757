"""Format-preserving edits of a spec's packages arrays: layout and comments are the user's."""

from __future__ import annotations

import pytest

from envforge.errors import InputError
from envforge.specedit import add_requirement, packages_path, remove_requirement

PYPI = ("pypi", "packages")
VERTICAL = """\
[pypi]
# the stack
packages = [
    "numpy==1.19.5",  # BLAS inside
    "six==1.16.0",    # six
    "h5py<3",         # Keras's saving
]

[debian]
suite = "bookworm"
"""
PACKED = """\
[pypi]
packages = ["numpy==1.19.5", "scipy==1.7.3", "six==1.16.0", "Theano-PyMC==1.0.5",
            "keras==2.3.1", "h5py<3"]
"""


def add(text: str, requirement: str, path: tuple[str, ...] = PYPI) -> str:
    return add_requirement(text, path, requirement, source="s.toml")


def remove(text: str, name: str, path: tuple[str, ...] = PYPI) -> str:
    return remove_requirement(text, path, name, source="s.toml")


def test_a_new_value_goes_on_its_own_line_indented_like_the_others() -> None:
    assert add(VERTICAL, "attrs==21.2.0") == VERTICAL.replace(
        '    "h5py<3",         # Keras\'s saving\n',
        '    "h5py<3",         # Keras\'s saving\n    "attrs==21.2.0",\n')


def test_a_value_of_the_same_name_is_replaced_in_place_keeping_its_comment() -> None:
    assert add(VERTICAL, "H5Py==2.10.0") == VERTICAL.replace('"h5py<3",   ', '"H5Py==2.10.0",   ')


def test_remove_takes_the_value_its_comma_and_its_comment_only() -> None:
    assert remove(VERTICAL, "six") == VERTICAL.replace('    "six==1.16.0",    # six\n', "")


def test_packed_lines_grow_until_wide_then_a_line_aligned_below() -> None:
    assert add(PACKED, "attrs") == PACKED.replace('"h5py<3"]', '"h5py<3", "attrs"]')
    long = "a" * 60
    assert add(PACKED, long) == PACKED.replace('"h5py<3"]', f'"h5py<3",\n            "{long}"]')
    assert remove(PACKED, "scipy") == PACKED.replace('"scipy==1.7.3", ', "")
    assert remove(PACKED, "h5py") == PACKED.replace(', "h5py<3"', "")
    assert remove(PACKED, "theano-pymc") == PACKED.replace(', "Theano-PyMC==1.0.5"', "")


def test_an_array_without_a_trailing_comma_keeps_none() -> None:
    text = '[pypi]\npackages = [\n  "a",\n  "b"\n]\n'
    assert add(text, "c") == '[pypi]\npackages = [\n  "a",\n  "b",\n  "c"\n]\n'
    assert remove(text, "b") == '[pypi]\npackages = [\n  "a"\n]\n'


def test_a_platform_s_table_is_made_when_missing_and_crlf_is_kept() -> None:
    text = '[project]\r\nname = "x"\r\n\r\n[pypi]\r\npackages = []\r\n'
    assert add(text, "pywin32==228", packages_path("win-64")) == (
        text + '\r\n[pypi.platform.win-64]\r\npackages = ["pywin32==228"]\r\n')
    assert add(text, "six") == text.replace("[]", '["six"]')
    assert add('[pypi]\nindex = "x"\n', "six") == '[pypi]\npackages = ["six"]\nindex = "x"\n'


def test_an_array_in_a_form_this_editor_does_not_write_is_refused() -> None:
    with pytest.raises(InputError, match=r"s.toml: \[pypi\] is not written as a table"):
        add('pypi = { packages = ["six"] }\n', "attrs")


def test_removing_a_name_the_array_lacks_names_what_it_holds() -> None:
    with pytest.raises(InputError, match=r"s.toml: attrs is not in \[pypi\] packages \(it holds: "
                       r"numpy==1.19.5, six==1.16.0, h5py<3\)"):
        remove(VERTICAL, "attrs")


def test_a_requirement_that_is_not_pep_508_is_refused_in_one_line() -> None:
    with pytest.raises(InputError) as raised:
        add(VERTICAL, "h5py=2")
    assert "'h5py=2' is not a requirement (PEP 508)" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_brackets_and_commas_in_strings_and_comments_are_not_structure() -> None:
    text = '[pypi]\npackages = [\n  "a[x]>=1",  # [not, ] structure\n  "b; os_name == \'nt\'",\n]\n'
    assert remove(text, "a") == '[pypi]\npackages = [\n  "b; os_name == \'nt\'",\n]\n'
    assert add(text, "b") == text.replace('"b; os_name == \'nt\'"', '"b"')

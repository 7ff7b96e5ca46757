from __future__ import annotations

from envforge.tomlpos import array_span, key_lines, line_of
from tests.testing.packs import REGISTRY

DOC = """\
# comment
[project]
name = "x"
platforms = [
  "win-64",
  ["nested", "array"],
]
after = 1

[theano.platform."win-64"]
device = "cuda"
a.b = 1

[[pkg]]
n = 1
[[pkg]]
n = 2
"""


def test_keys_tables_and_array_items_have_lines() -> None:
    lines = key_lines(DOC)
    assert lines[("project", "name")] == 3
    assert lines[("project", "platforms")] == 4
    assert lines[("project", "after")] == 8  # the multi-line array did not swallow it
    assert lines[("theano", "platform", "win-64", "device")] == 11
    assert lines[("theano", "platform", "win-64", "a", "b")] == 12
    assert lines[("pkg", "1", "n")] == 17


def test_each_value_of_an_array_has_its_own_line() -> None:
    """A refused pin is named at its own line, not at ``packages = [``."""
    lines = key_lines(DOC)
    assert line_of(lines, ("project", "platforms", 0)) == 5
    assert line_of(lines, ("project", "platforms", 1)) == 6  # a nested array is one value


def test_array_span_gives_each_value_its_place_comments_and_brackets_in_strings_aside() -> None:
    text = 'a = [\n  "x[",  # "not, a value" ]\n  \'y\', 3, {k = "]"},\n]\nb = 1\n'
    span = array_span(text, ("a",))
    assert span is not None
    assert [(text[i.start:i.end], i.line, i.value) for i in span.items] == [
        ('"x["', 2, "x["), ("'y'", 3, "y"), ("3", 3, None), ('{k = "]"}', 3, None)]
    assert text[span.open] == "[" and text[span.close] == "]" and text[span.close + 1] == "\n"
    assert array_span(text, ("b",)) is None
    assert array_span(text, ("absent",)) is None


def test_line_of_falls_back_to_the_nearest_known_parent() -> None:
    lines = key_lines(DOC)
    assert line_of(lines, ("project", "platforms", 7)) == 4
    assert line_of(lines, ("theano", "platform", "win-64", "nope")) == 10
    assert line_of(lines, ("absent",)) is None


def test_key_lines_is_linear_on_a_bracket_and_thousands_of_blanks() -> None:
    """Issue 10 #7: a description holding "[" + 4000 spaces + "x" took over a minute."""
    import time

    from envforge.spec import parse_spec

    text = ('[project]\nname = "x"\nplatforms = ["linux-64"]\n'
            'description = """\n[' + " " * 4000 + 'x\n"""\n'
            '[python]\nversion = "3.7"\n[environment]\nkind = "venv"\n')
    started = time.perf_counter()
    spec = parse_spec(text, source="x.toml", registry=REGISTRY)
    lines = key_lines(text)
    assert time.perf_counter() - started < 0.5
    assert spec.project.description.startswith("[")
    assert lines[("python", "version")] == 8
    assert not any(path[0].startswith(" ") for path in lines)  # the string is not a header


def test_lines_inside_a_multiline_string_are_not_keys() -> None:
    lines = key_lines('a = """\n[fake]\nb = 1\n"""\nc = 2\n')
    assert lines == {("a",): 1, ("c",): 5}

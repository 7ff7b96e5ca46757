from __future__ import annotations

from envforge.tomlpos import key_lines, line_of

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


def test_line_of_falls_back_to_the_nearest_known_parent() -> None:
    lines = key_lines(DOC)
    assert line_of(lines, ("project", "platforms", 1)) == 4
    assert line_of(lines, ("theano", "platform", "win-64", "nope")) == 10
    assert line_of(lines, ("absent",)) is None

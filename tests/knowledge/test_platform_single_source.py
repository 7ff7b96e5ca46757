"""The target platform is asked, never compared: envforge/platforms.py is the one place that
knows platform names and host checks.

Code outside it that compares with a platform name (``== "win-64"``, ``!= "linux-64"``,
``in ("win-64", ...)``, ``case "win-64":``), tests the host (``sys.platform ==``,
``os.name !=``, ``platform.system() ==``, ``sys.platform.startswith``) or takes a
``windows`` flag fails this test: a third platform would type-check and take the
``else``. Ask the ``TargetPlatform`` instead, or ``match platform.os`` with
``assert_never``. Dicts keyed by platform name (tables of facts) are data, not comparisons.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from envforge.platforms import PLATFORMS

PACKAGE = Path(__file__).resolve().parents[2] / "envforge"

# Every platform name envforge knows, and conda's others: a comparison with any of them is
# a platform branch.
NAMES = frozenset({*PLATFORMS, "osx-64", "osx-arm64", "linux-aarch64", "linux-ppc64le",
                   "win-32", "win-arm64"})
HOST_CHECKS = frozenset({"sys.platform", "os.name", "platform.system()", "platform.platform()",
                         "sys.platform.lower()"})
FLAGS = frozenset({"windows", "is_windows", "win"})

# (file relative to envforge/, why it may)
ALLOWED: dict[str, str] = {
    "platforms.py": "the platform model itself: the registry and host_platform()",
    "host/windows.py": "winreg and ctypes.windll exist only on Windows; mypy narrows on a "
                       "literal sys.platform check and on nothing else",
    "host/noopstamp.py": "the no-op fast path may not import envforge.platforms; "
                         "tests/host/test_noopstamp.py checks it agrees with host_platform()",
}


def _names_platform(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_platform(e) for e in node.elts)
    return False


def _offends(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        return any(_names_platform(o) or ast.unparse(o) in HOST_CHECKS
                   for o in (node.left, *node.comparators))
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("startswith", "endswith") \
            and ast.unparse(node.func.value) in HOST_CHECKS
    if isinstance(node, ast.MatchValue):
        return _names_platform(node.value)
    if isinstance(node, ast.arg):
        return node.arg in FLAGS
    if isinstance(node, ast.Assign):
        return isinstance(node.value, ast.Compare) and any(
            isinstance(t, ast.Name) and t.id in FLAGS for t in node.targets)
    return False


def offences(source: str) -> list[tuple[int, str]]:
    """(line, code) of every platform comparison, host check and ``windows`` flag."""
    lines = source.splitlines()
    found = sorted({node.lineno for node in ast.walk(ast.parse(source)) if _offends(node)})
    return [(n, lines[n - 1].strip()) for n in found]


def _code_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).as_posix() not in ALLOWED]


@pytest.mark.parametrize("path", _code_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_platform_is_compared_outside_the_model(path: Path) -> None:
    assert offences(path.read_text(encoding="utf-8")) == [], \
        "ask the TargetPlatform (envforge.platforms) or match on platform.os"


@pytest.mark.parametrize("code", [
    'if ctx.platform == "win-64":\n    pass',
    'sep = ";" if platform != "linux-64" else ":"',
    'if platform in ("win-64", "osx-64"):\n    pass',
    'if sys.platform == "win32":\n    pass',
    'kind = "win-amd64" if os.name == "nt" else "posix"',
    'if platform.system() == "Windows":\n    pass',
    'if sys.platform.startswith("win"):\n    pass',
    'match platform:\n    case "win-64":\n        pass',
    'def candidates(minor: str, *, windows: bool) -> None:\n    pass',
    'windows = facts.platform == target',
])
def test_the_scan_catches_a_planted_comparison(code: str) -> None:
    assert offences(code), code


def test_the_scan_catches_one_planted_in_real_code() -> None:
    """A comparison slipped into a real module (envlayout.py) is found on its line."""
    source = (PACKAGE / "envlayout.py").read_text(encoding="utf-8")
    assert offences(source) == []
    planted = source + '\n\ndef _windows(layout: EnvLayout) -> bool:\n' \
                       '    return layout.platform.name == "win-64"\n'
    assert offences(planted) == [(len(planted.splitlines()),
                                  'return layout.platform.name == "win-64"')]


def test_tables_and_questions_are_not_comparisons() -> None:
    code = ('FILES = {"win-64": "a.dll", "linux-64": "liba.so"}\n'
            'name = FILES["win-64"]\n'
            'if target.os is Os.WINDOWS:\n    pass\n'
            'sep = PLATFORMS[platform].pathsep\n'
            'if gxx.thread_model == "win32":\n    pass\n')
    assert offences(code) == []


def test_the_allow_list_is_small_and_real() -> None:
    assert len(ALLOWED) <= 4
    assert all((PACKAGE / name).is_file() for name in ALLOWED)

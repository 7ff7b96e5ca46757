"""Tampered locks: every field class mutated in a real lock, each refused the same way.

The real ``locks/theano-cpu.lock`` and its spec are copied; each mutation edits the lock's
text as an attacker or a bad merge would. ``apply --yes`` must stop with exit 2 and one line
naming the lock, its line and key, and nothing may appear anywhere under the test's folder
(no environment, no state, no download, no file beside the roots). An untouched copy plans
fine, so a refusal is the mutation's doing.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from envforge.cli import main

REPO = Path(__file__).resolve().parent.parent.parent
NUMPY = "numpy-1.19.5-cp37-cp37m-manylinux2010_x86_64.whl"
Mutation = Callable[[str], str]


def _replace(old: str, new: str, count: int = 1) -> Mutation:
    def mutate(text: str) -> str:
        assert old in text, f"the lock no longer holds {old!r}: update the mutation"
        return text.replace(old, new, count)
    return mutate


def _block(header: str, holding: str) -> str:
    """The text of the array-of-tables item under ``header`` that holds ``holding``."""
    for match in re.finditer(rf"^\[\[{re.escape(header)}\]\]\n(?:[^\[\n].*\n|\n)*",
                             _LOCK_TEXT, re.MULTILINE):
        if holding in match.group(0):
            return match.group(0)
    raise AssertionError(f"no [[{header}]] holding {holding!r}")


def _remove(header: str, holding: str) -> Mutation:
    return _replace(_block(header, holding), "")


def _duplicate(header: str, holding: str) -> Mutation:
    block = _block(header, holding)
    return _replace(block, block + block)


def _append(table: str, line: str) -> Mutation:
    return _replace(f"[{table}]\n", f"[{table}]\n{line}\n")


_LOCK_TEXT = (REPO / "locks" / "theano-cpu.lock").read_text(encoding="utf-8")
DEB = "platforms.linux-64.deb"
PYPI = "platforms.linux-64.pypi"
GFORTRAN_FILE = "pool/main/g/gcc-12/libgfortran5_12.2.0-14+deb12u1_amd64.deb"
FLAGS = "platforms.linux-64.expect.theano.flags"

# (field class, id) -> mutation; every one must be refused with exit 2.
MUTATIONS: dict[tuple[str, str], Mutation] = {
    ("path", "deb-filename-dotdot"): _replace(
        f'filename = "{GFORTRAN_FILE}"', 'filename = "../../../../../outside/x.deb"'),
    ("path", "deb-filename-absolute"): _replace(
        f'filename = "{GFORTRAN_FILE}"', 'filename = "/tmp/envforge-tamper-outside.deb"'),
    ("path", "deb-filename-nul"): _replace(f'filename = "{GFORTRAN_FILE}"',
                                           'filename = "pool/x\\u0000.deb"'),
    ("path", "deb-filename-long"): _replace(f'filename = "{GFORTRAN_FILE}"',
                                            f'filename = "pool/{"x" * 300}.deb"'),
    ("path", "wheel-filename-dotdot"): _replace(f'filename = "{NUMPY}"',
                                                f'filename = "../../{NUMPY}"'),
    ("path", "wheel-filename-folder"): _replace(f'filename = "{NUMPY}"',
                                                f'filename = "sub/{NUMPY}"'),
    ("path", "artifact-filename-absolute"): _replace(
        'filename = "x86_64-8.1.0-release-posix-seh-rt_v6-rev0.7z"',
        'filename = "C:/Windows/x86_64-8.1.0-release-posix-seh-rt_v6-rev0.7z"'),
    ("path", "url-scheme"): _replace('url = "https://deb.debian.org/debian/pool/main/g/gcc-12/'
                                     'libgfortran5', 'url = "ftp://deb.debian.org/debian/pool/'
                                     'main/g/gcc-12/libgfortran5'),
    ("source", "index-file-url"): _replace('pypi_index = "https://pypi.org/simple"',
                                           'pypi_index = "file:///tmp/envforge-outside/simple"'),
    ("source", "index-other-host"): _replace('pypi_index = "https://pypi.org/simple"',
                                             'pypi_index = "https://evil.example/simple"'),
    ("source", "extra-index"): _replace('pypi_index = "https://pypi.org/simple"',
                                        'pypi_index = "https://pypi.org/simple"\n'
                                        'pypi_extra_indexes = ["https://evil.example/simple"]'),
    ("source", "wheel-file-url"): _replace(
        'url = "https://files.pythonhosted.org/packages/08/d6/a6aaa29fea945bc6c61d11f6e0697b325'
        'ff7446de5ffd62c2fa02f627048/', 'url = "file:///tmp/envforge-outside/'),
    ("name", "deb-name-dotdot"): _replace('name = "libgfortran5"',
                                          'name = "../../../../outside/libgfortran5"'),
    ("name", "deb-name-slash"): _replace('name = "libgfortran5"', 'name = "lib/gfortran5"'),
    ("name", "pypi-name-blank"): _replace('name = "six"', 'name = "six evil"', 2),
    ("name", "pypi-name-renamed"): _replace('name = "six"', 'name = "sixx"', 2),
    ("version", "deb-version-dotdot"): _replace('version = "0.3.21+ds-4"',
                                                'version = "0.3.21/../../../../../x"'),
    ("version", "pypi-version-slash"): _replace('version = "1.16.0"\n',
                                                'version = "1.16.0/../x"\n'),
    ("version", "pypi-version-other"): _replace('version = "1.19.5"\n', 'version = "1.19.4"\n'),
    ("version", "python"): _replace('python = "3.7"\n\n[platforms.linux-64.apply]',
                                    'python = "3.07"\n\n[platforms.linux-64.apply]'),
    ("python", "suite-group-3.11"): _append("platforms.linux-64.suite", 'python = "3.11.9"'),
    ("python", "wheel-cp311"): _replace(f'filename = "{NUMPY}"',
                                        'filename = "numpy-1.19.5-cp311-cp311-manylinux2010_x86_64'
                                        '.whl"'),
    ("hash", "sha256-short"): _replace('sha256 = "63d38775d20c425c1f00914b52167ae0e3b4639facdb'
                                       '0aa734877279fb716fbb"', 'sha256 = "63d38775"'),
    ("hash", "sha256-upper"): _replace('sha256 = "63d38775d20c425c1f00914b52167ae0e3b4639facdb'
                                       '0aa734877279fb716fbb"', 'sha256 = "63D38775D20C425C1F00'
                                       '914B52167AE0E3B4639FACDB0AA734877279FB716FBB"'),
    ("hash", "artifact-other-hash"): _replace(
        'sha256 = "853970527b5de4a55ec8ca4d3fd732c00ae1c69974cc930c82604396d43e79f8"',
        'sha256 = "' + "0" * 64 + '"'),
    ("duplicate", "pypi-numpy"): _duplicate(PYPI, 'name = "numpy"'),
    ("duplicate", "deb-openblas"): _duplicate(DEB, 'name = "libopenblas0-pthread"'),
    ("duplicate", "win-artifact"): _duplicate("platforms.win-64.artifacts", 'role = "compiler"'),
    ("removal", "pypi-numpy"): _remove(PYPI, 'name = "numpy"'),
    ("removal", "pypi-theano"): _remove(PYPI, 'name = "theano-pymc"'),
    ("removal", "deb-gfortran"): _remove(DEB, 'name = "libgfortran5"'),
    ("removal", "win-artifact"): _remove("platforms.win-64.artifacts", 'role = "compiler"'),
    ("removal", "expect-flag"): _replace('mode = "FAST_RUN"\n', "", 1),
    ("flag", "newline-key"): _append(FLAGS, '"device\\n[global]\\ndevice" = "cuda"'),
    ("flag", "global-device"): _append(FLAGS, '"global.device" = "cuda"'),
    ("flag", "default-section"): _append(FLAGS, '"DEFAULT.device" = "cuda"'),
    ("flag", "newline-value"): _replace('mode = "FAST_RUN"\n', 'mode = "FAST_RUN\\ndevice=cuda"\n',
                                        1),
    ("flag", "compiledir-outside"): _replace('base_compiledir = "{prefix}/theano-compiledir"',
                                             'base_compiledir = "/tmp/envforge-outside"', 1),
    ("flag", "extra-flag"): _append(FLAGS, '"gcc.cxxflags" = "-O0"'),
    ("flag", "device"): _replace('device = "cpu"\nfloat_x', 'device = "cuda"\nfloat_x', 1),
    ("value", "repeats-huge"): _replace("repeats = 3\n", "repeats = 1000000000000\n", 1),
    ("value", "seed-negative"): _replace("seed = 22\n", "seed = -1\n", 1),
    ("value", "seed-2-32"): _replace("seed = 22\n", "seed = 4294967296\n", 1),
    ("value", "rtol-inf"): _replace("rtol = 1e-06\n", "rtol = inf\n", 1),
    ("value", "checksum-nan"): _replace("checksum = 17203.9630801\n", "checksum = nan\n", 1),
    ("value", "speedup-inf"): _replace("repeats = 3\n", "repeats = 3\nmin_gpu_speedup = inf\n", 1),
    ("value", "size-negative"): _replace("size = 792696\n", "size = -61\n"),
    ("value", "environment"): _replace('environment = "venv"', 'environment = "conda"', 1),
    ("value", "format-version"): _replace("version = 3\n", "version = 4\n", 1),
    ("value", "deep-nesting"): _replace("conda = []\n", "conda = " + "[" * 5000 + "]" * 5000
                                        + "\n", 1),
}
# what apply reads of the spec (lock format 3): the apply table, a pack's settings
_APPLY = '[platforms.linux-64.apply]\npath_scope = "env"\n\n'
_GCC = '[platforms.linux-64.apply.compiler]\nkind = "gcc"\n\n'
MUTATIONS.update({
    ("apply", "compiler-removed"): _replace(_GCC, ""),
    ("apply", "compiler-kind"): _replace(_GCC, _GCC.replace('"gcc"', '"mingw-w64"')),
    ("apply", "mingw-threads"): _replace('threads = "posix"', 'threads = "win32"'),
    ("apply", "path-scope"): _replace(_APPLY, _APPLY.replace('"env"', '"user"')),
    ("apply", "table-removed"): _replace(_APPLY + _GCC, ""),
    ("apply", "theanorc-home"): _replace('theanorc = "env"', 'theanorc = "home"', 1),
})
for _channels in ("[]", "[3]", "[3, 0]", "[3, -1]", "[3, 100000000]"):
    MUTATIONS[("value", f"channels-{_channels}")] = _replace(
        "[platforms.linux-64.expect.kernels.conv]\nborder_mode = \"half\"\nchannels = [\n"
        "    3,\n    32,\n    64,\n    64,\n    64,\n]",
        f"[platforms.linux-64.expect.kernels.conv]\nborder_mode = \"half\"\nchannels = "
        f"{_channels}")


def _project(tmp_path: Path, lock_text: str) -> tuple[Path, Path]:
    (tmp_path / "specs").mkdir()
    (tmp_path / "locks").mkdir()
    spec = tmp_path / "specs" / "theano-cpu.toml"
    shutil.copyfile(REPO / "specs" / "theano-cpu.toml", spec)
    (tmp_path / "locks" / "theano-cpu.lock").write_text(lock_text, encoding="utf-8")
    return spec, tmp_path / "locks" / "theano-cpu.lock"


def _tree(root: Path, base: Path | None = None) -> dict[str, bytes]:
    return {str(p.relative_to(base or root)): p.read_bytes() if p.is_file() else b""
            for p in root.rglob("*")}


def _watched(sandbox: Path, case: Path) -> dict[str, bytes]:
    """What one case's apply could write to: its own folder, envforge's home, the user's home
    and the sandbox's top level (not the earlier cases' folders: walking them every time made
    the test quadratic, 70 s of its 80 under Wine; the whole sandbox is compared once at the
    end)."""
    tops = {f"top:{p.name}": b"" for p in sandbox.iterdir()}
    return {**tops, **{k: v for root in (case, sandbox / "home", sandbox / "user")
                       if root.exists() for k, v in _tree(root, sandbox).items()}}


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVFORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    for name in ("outside", "envforge-outside", "envforge-tamper-outside.deb"):
        assert not (Path("/tmp") / name).exists()
    return tmp_path


def test_the_untouched_lock_plans(sandbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, _ = _project(sandbox, _LOCK_TEXT)
    assert main(["plan", str(spec)]) == 3  # changes pending: the lock itself is accepted
    assert "error" not in capsys.readouterr().err


def test_every_tampered_lock_is_refused_before_anything_is_written(
        sandbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused: Counter[str] = Counter()
    failures: list[str] = []
    expected = _tree(sandbox)
    for (field_class, name), mutate in MUTATIONS.items():
        case = sandbox / f"{field_class}-{name}"
        case.mkdir()
        spec, lock = _project(case, mutate(_LOCK_TEXT))
        expected.update(_tree(case, sandbox), **{str(case.relative_to(sandbox)): b""})
        before = _watched(sandbox, case)
        code = main(["apply", str(spec), "--yes", "--prefix", str(case / "env")])
        err = capsys.readouterr().err
        after = _watched(sandbox, case)
        one_line = err.count("\n") == 1 and re.search(rf"{re.escape(str(lock))}(:\d+)?: ", err)
        if code == 2 and one_line and after == before:
            refused[field_class] += 1
        else:
            failures.append(f"{field_class}/{name}: exit {code}, {err.strip()[:200]!r}, "
                            f"{sorted(set(after) - set(before))[:3]} written")
    assert _tree(sandbox) == expected  # nothing written into an earlier case's folder either
    for outside in ("/tmp/outside", "/tmp/envforge-outside", "/tmp/envforge-tamper-outside.deb"):
        assert not Path(outside).exists()
    total = sum(refused.values())
    print(f"\ntampered locks: {len(MUTATIONS)} cases, {total} refused with exit 2, "
          f"{len(failures)} failed; by field class: {dict(sorted(refused.items()))}")
    assert failures == []


@pytest.mark.parametrize(("value", "message"), [
    ("cudnn=/etc/hostname", "locks no cudnn archive"),
    ("toolkit=/etc/hostname", "unknown role"),
])
def test_an_artifact_the_lock_does_not_hold_is_refused(
        sandbox: Path, capsys: pytest.CaptureFixture[str], value: str, message: str) -> None:
    """Issue 10 #12: ``--artifact`` with an unknown role or one the lock has not was ignored."""
    spec, _ = _project(sandbox, _LOCK_TEXT)
    before = _tree(sandbox)
    assert main(["apply", str(spec), "--yes", "--artifact", value]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert _tree(sandbox) == before

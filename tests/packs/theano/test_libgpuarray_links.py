"""libgpuarray's library names on CUDA-shaped trees built here, and on a real GPU host; the
Theano pack plans the step where the core's plan had it."""

from __future__ import annotations

import ctypes
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from envforge.app.context import prepare
from envforge.errors import StepError
from envforge.host.ldcache import parse_ldconfig
from envforge.journal import Journal, rollback
from envforge.packs.theano.libgpuarray_links import LibgpuarrayLinksStep, find_soname, links_dir
from envforge.plan import build_steps
from envforge.steps.base import StepContext
from envforge.ui import UI
from tests.steps.test_cudnn import windows_cuda_tree
from tests.testing.contexts import apply_step, make_ctx
from tests.testing.trees import snapshot


def cuda13_tree(base: Path) -> Path:
    """CUDA 13 as NVIDIA installs it: libraries under targets/, lib64 a link to them."""
    root = base / "usr" / "local" / "cuda-13.0"
    lib = root / "targets" / "x86_64-linux" / "lib"
    lib.mkdir(parents=True)
    (root / "lib64").symlink_to("targets/x86_64-linux/lib")
    (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK",
                                                            "version": "13.0.1"}}))
    for real, links in (("libnvrtc.so.13.0.48", ("libnvrtc.so.13", "libnvrtc.so")),
                        ("libcublas.so.13.0.0.19", ("libcublas.so.13", "libcublas.so")),
                        ("libnvrtc-builtins.so.13.0.48", ("libnvrtc-builtins.so.13.0",))):
        (lib / real).write_bytes(b"\x7fELF " + real.encode())
        target = real
        for link in links:
            (lib / link).symlink_to(target)
            target = link
    return root


def cuda102_tree(base: Path) -> Path:
    """CUDA 10.2 from the runfile: versioned libraries directly in lib64."""
    root = base / "usr" / "local" / "cuda-10.2"
    (root / "lib64").mkdir(parents=True)
    (root / "version.txt").write_text("CUDA Version 10.2.89\n")
    for real, soname in (("libnvrtc.so.10.2.89", "libnvrtc.so.10.2"),
                         ("libcublas.so.10.2.2.89", "libcublas.so.10")):
        (root / "lib64" / real).write_bytes(b"\x7fELF " + real.encode())
        (root / "lib64" / soname).symlink_to(real)
    return root


def driver_dir(base: Path) -> Path:
    folder = base / "usr" / "lib" / "x86_64-linux-gnu"
    folder.mkdir(parents=True)
    (folder / "libcuda.so.580.159.04").write_bytes(b"\x7fELF driver")
    (folder / "libcuda.so.1").symlink_to("libcuda.so.580.159.04")
    return folder


REPO = Path(__file__).resolve().parents[3]
CORE_BEFORE = ["prefix", "debian-packages", "environment", "pypi-packages", "compiler"]


@pytest.mark.posix_only("the specs' linux-64 steps: the host's platform is the one planned")
@pytest.mark.parametrize(("spec", "steps"), [
    ("theano-gpu-linux", [*CORE_BEFORE, "cuda-toolkit", "libgpuarray-links", "theanorc",
                          "activation"]),
    ("keras-theano-gpu-linux", [*CORE_BEFORE, "cuda-toolkit", "libgpuarray-links", "theanorc",
                                "keras-json", "activation"]),
    ("theano-cpu", [*CORE_BEFORE, "theanorc", "activation"]),  # no CUDA, no pygpu: no links
])
def test_the_specs_plan_the_links_where_the_core_did(tmp_path: Path, spec: str,
                                                     steps: list[str]) -> None:
    """After the CUDA toolkit, before the .theanorc and any other pack's steps, under the
    name journals of earlier envforge recorded (a rollback of those finds it unchanged)."""
    ctx = prepare(REPO / "specs" / f"{spec}.toml", prefix=tmp_path / "env", artifacts={},
                  bundle=None, offline=True, ui=UI(quiet=True),
                  environ={"ENVFORGE_HOME": str(tmp_path / "home")})
    assert [step.name for step in build_steps(ctx)] == steps


def run(step: LibgpuarrayLinksStep, ctx: StepContext) -> Journal:
    return apply_step(step, ctx)


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_linux_links_point_at_the_driver_and_the_toolkit(tmp_path: Path) -> None:
    root = cuda13_tree(tmp_path / "host")
    driver = driver_dir(tmp_path / "host")
    ctx = make_ctx(tmp_path, "linux-64", root)
    step = LibgpuarrayLinksStep(driver_dirs=[driver])
    lib = root / "lib64"

    changes = step.describe(ctx)
    assert [(Path(c.target).name, c.action, c.before, c.after) for c in changes] == [
        ("libcuda.so", "link", None, str(driver / "libcuda.so.1")),
        ("libnvrtc.so", "link", None, str(lib / "libnvrtc.so.13")),
        ("libcublas.so", "link", None, str(lib / "libcublas.so.13")),
    ]
    assert not links_dir(ctx.prefix).exists()  # describing changed nothing

    run(step, ctx)

    folder = links_dir(ctx.prefix)
    assert folder == ctx.prefix / "envforge-libs"
    assert (folder / "libnvrtc.so").readlink() == lib / "libnvrtc.so.13"
    assert (folder / "libnvrtc.so").read_bytes() == b"\x7fELF libnvrtc.so.13.0.48"
    assert (folder / "libcuda.so").read_bytes() == b"\x7fELF driver"
    assert step.describe(ctx) == ()


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_rollback_removes_the_links_folder(tmp_path: Path) -> None:
    root = cuda13_tree(tmp_path / "host")
    ctx = make_ctx(tmp_path, "linux-64", root)
    ctx.prefix.mkdir()
    before = snapshot(tmp_path / "host"), snapshot(ctx.prefix)
    journal = run(LibgpuarrayLinksStep(driver_dirs=[driver_dir(tmp_path / "drv")]), ctx)
    rollback(journal)
    assert (snapshot(tmp_path / "host"), snapshot(ctx.prefix)) == before


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_stale_link_is_replaced_and_restored_on_rollback(tmp_path: Path) -> None:
    root = cuda102_tree(tmp_path / "host")
    ctx = make_ctx(tmp_path, "linux-64", root)
    folder = links_dir(ctx.prefix)
    folder.mkdir(parents=True)
    (folder / "libnvrtc.so").symlink_to("/usr/local/cuda-9.0/lib64/libnvrtc.so.9.0")
    step = LibgpuarrayLinksStep(driver_dirs=[driver_dir(tmp_path / "drv")])

    nvrtc = next(c for c in step.describe(ctx) if c.target.endswith("libnvrtc.so"))
    assert nvrtc.before == "link:/usr/local/cuda-9.0/lib64/libnvrtc.so.9.0"
    assert nvrtc.after == str(root / "lib64" / "libnvrtc.so.10.2")  # the name the table expects
    journal = run(step, ctx)
    assert (folder / "libcublas.so").readlink() == root / "lib64" / "libcublas.so.10"
    rollback(journal)
    assert (folder / "libnvrtc.so").readlink() == Path("/usr/local/cuda-9.0/lib64/libnvrtc.so.9.0")
    assert not (folder / "libcublas.so").exists()


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_missing_toolkit_library_names_the_file_and_the_folders(tmp_path: Path) -> None:
    root = cuda102_tree(tmp_path / "host")
    (root / "lib64" / "libnvrtc.so.10.2").unlink()
    (root / "lib64" / "libnvrtc.so.10.2.89").unlink()
    ctx = make_ctx(tmp_path, "linux-64", root)
    step = LibgpuarrayLinksStep(driver_dirs=[driver_dir(tmp_path / "drv")])
    with pytest.raises(StepError) as caught:
        step.describe(ctx)
    assert str(caught.value) == (f"libnvrtc.so.10.2 is missing: looked in {root / 'lib64'}, "
                                 f"{root / 'targets' / 'x86_64-linux' / 'lib'}")


@pytest.mark.posix_only("Linux shared-library symlinks (libX.so -> libX.so.N)")
def test_missing_driver_is_named_and_its_link_left_out(tmp_path: Path) -> None:
    ctx = replace(make_ctx(tmp_path, "linux-64", cuda13_tree(tmp_path / "host")), ui=UI())
    empty = tmp_path / "no-driver"
    empty.mkdir()
    warnings: list[str] = []
    ctx.ui.warn = warnings.append  # type: ignore[method-assign]
    changes = LibgpuarrayLinksStep(driver_dirs=[empty]).describe(ctx)
    assert sorted(Path(c.target).name for c in changes) == ["libcublas.so", "libnvrtc.so"]
    assert len(warnings) == 1
    assert re.search(rf"libcuda.so.1 \(the NVIDIA driver's library\) is missing: looked in "
                     rf"{empty}; is the NVIDIA driver", warnings[0])


def test_without_a_version_file_the_highest_soname_is_taken(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    names = ("libcublas.so.11", "libcublas.so.12", "libcublas.so.12.4.5.8", "libcublasLt.so.12")
    for name in names:
        (lib / name).write_bytes(b"x")
    assert find_soname("cublas", [lib], None, None) == lib / "libcublas.so.12"
    assert find_soname("cublas", [lib], None, 11) == lib / "libcublas.so.11"
    assert find_soname("cublas", [lib], "libcublas.so.10", 12) == lib / "libcublas.so.12"


def test_the_name_the_version_table_expects_wins(tmp_path: Path) -> None:
    # CUDA 11.8 ships libnvrtc.so.11.2; leftovers of other 11.x installs must not be linked.
    root = tmp_path / "cuda-11.8"
    (root / "lib64").mkdir(parents=True)
    for name in ("libnvrtc.so.11.1", "libnvrtc.so.11.2", "libnvrtc.so.11.9", "libcublas.so.11"):
        (root / "lib64" / name).write_bytes(b"x")
    ctx = make_ctx(tmp_path, "linux-64", root)
    step = LibgpuarrayLinksStep(toolkit_cuda="11.8", driver_dirs=[driver_dir(tmp_path / "d")])
    targets = {Path(c.target).name: c.after for c in step.describe(ctx)}
    assert targets["libnvrtc.so"] == str(root / "lib64" / "libnvrtc.so.11.2")
    assert targets["libcublas.so"] == str(root / "lib64" / "libcublas.so.11")
    lib = tmp_path / "unknown"
    lib.mkdir()
    for name in ("libnvrtc.so.11.2", "libnvrtc.so.11.1"):
        (lib / name).write_bytes(b"x")
    assert find_soname("nvrtc", [lib], None, None) == lib / "libnvrtc.so.11.2"


def test_parse_ldconfig_keeps_x86_64_entries() -> None:
    text = ("1234 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
            "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
            "\tlibcuda.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so\n")
    assert parse_ldconfig(text, "libcuda.so.1") == [Path("/usr/lib/x86_64-linux-gnu/libcuda.so.1")]


@pytest.mark.parametrize(("driver", "nvrtc", "cublas"), [
    ("10.2", "nvrtc64_102.dll", "cublas64_102.dll"),
    ("12.4", "nvrtc64_124.dll", "cublas64_124.dll"),
])
def test_windows_copies_under_the_names_the_loader_asks_for(tmp_path: Path, driver: str,
                                                            nvrtc: str, cublas: str) -> None:
    root = windows_cuda_tree(tmp_path / "C")
    before = snapshot(root)
    ctx = make_ctx(tmp_path, "win-64", root)
    step = LibgpuarrayLinksStep(driver_cuda=driver)

    changes = step.describe(ctx)
    assert [(Path(c.target).name, c.action) for c in changes] == [(nvrtc, "create"),
                                                                  (cublas, "create")]
    journal = run(step, ctx)
    assert (root / "bin" / nvrtc).read_bytes() == (root / "bin" / "nvrtc64_102_0.dll").read_bytes()
    assert (root / "bin" / cublas).read_bytes() == (root / "bin" / "cublas64_10.dll").read_bytes()
    assert step.describe(ctx) == ()

    rollback(journal)
    assert snapshot(root) == before


def test_windows_missing_dll_names_it_and_the_folder(tmp_path: Path) -> None:
    root = windows_cuda_tree(tmp_path / "C")
    (root / "bin" / "cublas64_10.dll").unlink()
    ctx = make_ctx(tmp_path, "win-64", root)
    with pytest.raises(StepError) as caught:
        LibgpuarrayLinksStep(driver_cuda="10.2").describe(ctx)
    assert str(caught.value) == f"cublas64_10.dll is missing: looked in {root / 'bin'}"


def test_no_toolkit(tmp_path: Path) -> None:
    with pytest.raises(StepError, match="none was found"):
        LibgpuarrayLinksStep().describe(make_ctx(tmp_path, "linux-64", None))


def _real_cuda() -> Path | None:
    root = Path("/usr/local/cuda")
    if not Path("/dev/nvidiactl").exists() or not (root / "lib64").exists():
        return None
    return root


@pytest.mark.gpu
@pytest.mark.skipif(_real_cuda() is None, reason="needs an NVIDIA driver and /usr/local/cuda")
def test_real_host_links_load_and_answer(tmp_path: Path) -> None:
    """On the GPU host: the links made from ldconfig and the real toolkit really load."""
    root = _real_cuda()
    assert root is not None
    ctx = make_ctx(tmp_path, "linux-64", root)
    journal = run(LibgpuarrayLinksStep(), ctx)
    folder = links_dir(ctx.prefix)

    cuda = ctypes.CDLL(str(folder / "libcuda.so"))
    version = ctypes.c_int()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDriverGetVersion(ctypes.byref(version)) == 0
    nvrtc = ctypes.CDLL(str(folder / "libnvrtc.so"))
    major, minor = ctypes.c_int(), ctypes.c_int()
    assert nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0
    cublas = ctypes.CDLL(str(folder / "libcublas.so"))
    cublas_major = ctypes.c_int()
    assert cublas.cublasGetProperty(0, ctypes.byref(cublas_major)) == 0  # MAJOR_VERSION
    print(f"driver CUDA {version.value}, NVRTC {major.value}.{minor.value}, "
          f"cuBLAS {cublas_major.value}; links: "
          + ", ".join(f"{p.name} -> {p.readlink()}" for p in sorted(folder.iterdir())))
    assert major.value == cublas_major.value  # both from the same toolkit

    rollback(journal)
    assert not folder.exists()

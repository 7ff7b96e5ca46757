"""The library names libgpuarray 0.7.6 (pygpu's C library) loads, made to exist: the Theano
pack's step after the core's CUDA steps, where the lock holds pygpu and a CUDA toolkit.

Linux: it dlopens the unversioned ``libcuda.so``, ``libnvrtc.so`` and ``libcublas.so``,
names only -dev packages provide. envforge makes them as links in
``<prefix>/envforge-libs`` (activation puts that first on LD_LIBRARY_PATH): libcuda.so to
the driver's libcuda.so.1, the others to the toolkit's versioned libraries.

Windows: it asks for ``nvrtc64_<driver major><minor>.dll`` and ``cublas64_<...>.dll``, where
the digits are the DRIVER's CUDA version; no CUDA 10+ toolkit ships such names
(``nvrtc64_102_0.dll``, ``cublas64_10.dll``). envforge copies them under the asked-for names
into the toolkit's bin folder (Theano/Theano#6681, libgpuarray#587).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, assert_never

from envforge.envlayout import LINKS_DIR
from envforge.errors import StepError
from envforge.host.cuda import read_driver, toolkit_version
from envforge.host.ldcache import ldconfig_output, parse_ldconfig
from envforge.host.platform import cuda_layout
from envforge.journal import Transaction
from envforge.knowledge import cuda_library_name, driver_library
from envforge.packs.theano.libgpuarray import libgpuarray_names
from envforge.platforms import PLATFORMS, Os
from envforge.steps.actions import StepPlan, file_plan, perform_all
from envforge.steps.base import Change, StepContext, Want, WantFile, WantLink

# Where distributions and NVIDIA's installers put libcuda.so.1 when ldconfig does not say.
DRIVER_DIRS: tuple[Path, ...] = (
    Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"), Path("/usr/lib"),
    Path("/usr/local/nvidia/lib64"), Path("/usr/lib/wsl/lib"),
)


def links_dir(prefix: Path) -> Path:
    return prefix / LINKS_DIR


def _version_key(name: str) -> tuple[int, ...]:
    suffix = name.split(".so.", 1)[1]
    return tuple(int(p) for p in suffix.split("."))


def find_soname(library: str, dirs: Sequence[Path], expected: str | None,
                major: int | None) -> Path:
    """``lib<library>.so.N`` (or ``.so.N.M``) in the first folder holding it.

    The name the toolkit's version table expects wins; otherwise one of the toolkit's
    major version; otherwise, with the version unknown, the highest major. Among those,
    a shorter name (the SONAME, ``.so.12``) beats a longer one, then the higher version.
    """
    pattern = re.compile(rf"^lib{re.escape(library)}\.so\.\d+(\.\d+)?$")
    for folder in dirs:
        if expected and (folder / expected).exists():
            return folder / expected
    candidates = [p for folder in dirs if folder.is_dir() for p in sorted(folder.iterdir())
                  if pattern.match(p.name) and p.exists()]
    if major is not None:
        candidates = [p for p in candidates if _version_key(p.name)[0] == major]
    if candidates:
        return max(candidates, key=lambda p: (_version_key(p.name)[0],
                                              -len(_version_key(p.name)), _version_key(p.name)))
    wanted = expected or f"lib{library}.so.<version>"
    raise StepError(f"{wanted} is missing: looked in {', '.join(str(d) for d in dirs)}")


class LibgpuarrayLinksStep:
    """Make the names libgpuarray's loader asks for; nothing else is touched.

    ``driver_cuda`` (Windows: the driver's CUDA version, e.g. "10.2") defaults to what
    nvidia-smi reports; ``toolkit_cuda`` to the toolkit's version.json/version.txt;
    ``driver_dirs`` replaces ldconfig and the usual folders when looking for libcuda.so.1.
    """

    name = "libgpuarray-links"  # journals and saved plans of earlier envforge name it so

    def __init__(self, *, driver_cuda: str | None = None, toolkit_cuda: str | None = None,
                 driver_dirs: Sequence[Path] | None = None) -> None:
        self.driver_cuda = driver_cuda
        self.toolkit_cuda = toolkit_cuda
        self.driver_dirs = None if driver_dirs is None else tuple(driver_dirs)

    def plan(self, ctx: StepContext) -> StepPlan:
        changes, actions = file_plan(self.wants(ctx))
        return StepPlan(step=self.name, changes=changes, actions=actions)

    def describe(self, ctx: StepContext) -> tuple[Change, ...]:
        return self.plan(ctx).changes

    def apply(self, ctx: StepContext, tx: Transaction) -> None:
        perform_all(self.plan(ctx), tx)

    def wants(self, ctx: StepContext) -> list[Want]:
        if ctx.cuda_root is None:
            raise StepError("libgpuarray needs a CUDA toolkit's NVRTC and cuBLAS; none was found")
        target = PLATFORMS[ctx.platform]
        match target.os:
            case Os.WINDOWS:
                return self._windows(ctx, ctx.cuda_root)
            case Os.LINUX:
                return self._linux(ctx, ctx.cuda_root)
            case _:
                assert_never(target.os)

    def _toolkit(self, root: Path) -> str | None:
        return self.toolkit_cuda or toolkit_version(root)

    def _linux(self, ctx: StepContext, root: Path) -> list[Want]:
        folder = links_dir(ctx.prefix)
        wants: list[Want] = []
        driver = libgpuarray_names("linux-64", "0").driver
        try:
            wants.append(WantLink(folder / driver, str(self._driver_library())))
        except StepError as missing:
            # An environment may be provisioned before it reaches its GPU host; verify
            # then fails naming libcuda.so, and a re-apply on the GPU host adds the link.
            ctx.ui.warn(f"{missing}; {driver} is left out until a driver is there")
        version = self._toolkit(root)
        major = int(version.split(".")[0]) if version else None
        dirs = (root / "lib64", root / "targets" / "x86_64-linux" / "lib")
        loader = libgpuarray_names("linux-64", version or "0")
        libraries: tuple[tuple[Literal["nvrtc", "cublas"], str], ...] = (
            ("nvrtc", loader.nvrtc[0]), ("cublas", loader.cublas[0]))
        for library, asked in libraries:
            fact = cuda_library_name(version, library, "linux-64") if version else None
            found = find_soname(library, dirs, fact.value if fact else None, major)
            wants.append(WantLink(folder / asked, str(found)))
        return wants

    def _driver_library(self) -> Path:
        if self.driver_dirs is not None:
            listed: list[Path] = []
            dirs = self.driver_dirs
        else:
            listed = parse_ldconfig(ldconfig_output(), driver_library("linux-64"))
            dirs = DRIVER_DIRS
        for candidate in (*listed, *(d / driver_library("linux-64") for d in dirs)):
            if candidate.exists():
                return candidate
        raise StepError(f"{driver_library('linux-64')} (the NVIDIA driver's library) is "
                        "missing: looked in "
                        f"{'ldconfig -p, ' if self.driver_dirs is None else ''}"
                        f"{', '.join(str(d) for d in dirs)}; is the NVIDIA driver installed?")

    def _windows(self, ctx: StepContext, root: Path) -> list[Want]:
        driver = self.driver_cuda or read_driver(ctx.environ).cuda
        if driver is None:
            raise StepError("the driver's CUDA version is unknown (nvidia-smi did not report "
                            "it), and libgpuarray's DLL names depend on it")
        version = self._toolkit(root)
        if version is None:
            raise StepError(f"{root} has no version.json or version.txt saying its CUDA version")
        nvrtc = cuda_library_name(version, "nvrtc", "win-64")
        cublas = cuda_library_name(version, "cublas", "win-64")
        if nvrtc is None or cublas is None:
            raise StepError(f"no DLL names known for CUDA {version}")
        loader = libgpuarray_names("win-64", driver)
        bin_dir = cuda_layout("win-64", root).bin
        wants: list[Want] = []
        for asked, shipped in ((loader.nvrtc[0], nvrtc.value), (loader.cublas[0], cublas.value)):
            source = bin_dir / shipped
            if not source.is_file():
                raise StepError(f"{shipped} is missing: looked in {bin_dir}")
            if not PLATFORMS[ctx.platform].same_file_name(asked, shipped):
                wants.append(WantFile(bin_dir / asked, source))
        return wants

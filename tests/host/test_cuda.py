"""host/cuda: the one observation of CUDA toolkits, the driver and GPUs.

Parsers are fed what the real tools print (nvcc 10.2 and 13.0, version.json/.txt, the
kernel module's version file and nvidia-smi on the H200 host, r440 and r384 banners);
discovery is pointed at CUDA-shaped trees with a runner that answers as those tools did;
the toolkit installed on this machine is found and read for real.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from envforge.host.cmdoutput import CommandOutput, run_command
from envforge.host.cuda import (
    GPU_QUERY,
    GPU_QUERY_OLD,
    Gpu,
    find_toolkits,
    observe_toolkits,
    parse_gpu_query,
    parse_nvcc_version,
    parse_nvidia_smi,
    parse_proc_driver,
    parse_version_json,
    parse_version_txt,
    path_folders,
    read_driver,
    read_gpus,
    toolkit_version_of,
)
from envforge.platforms import PLATFORMS, host_platform

LINUX, WINDOWS = PLATFORMS["linux-64"], PLATFORMS["win-64"]

NVCC_10_2 = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2019 NVIDIA Corporation
Built on Wed_Oct_23_19:24:38_PDT_2019
Cuda compilation tools, release 10.2, V10.2.89
"""
NVCC_13_0 = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""
VERSION_JSON_11_8 = """\
{
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "11.8.20220929"
   },
   "cuda_cudart" : {
      "name" : "CUDA Runtime (cudart)",
      "version" : "11.8.89"
   }
}
"""
VERSION_TXT_10_2 = "CUDA Version 10.2.89\r\n"  # as the Windows installer writes it
PROC_440 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  440.33.01  Wed Nov 13 00:00:22 "
            "UTC 2019\nGCC version:  gcc version 7.4.0 (Ubuntu 7.4.0-1ubuntu1~18.04.1) \n")
PROC_H200 = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release "
             "Build  (nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n")
SMI_H200 = """\
Wed Dec  2 15:43:51 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                    0 |
| N/A   35C    P0             78W /  700W |       0MiB / 143771MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
"""
SMI_440 = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 440.33.01    Driver Version: 440.33.01    CUDA Version: 10.2     |
|-------------------------------+----------------------+----------------------+
"""
SMI_384 = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 384.130                Driver Version: 384.130                   |
|-------------------------------+----------------------+----------------------+
"""
SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                 "driver. Make sure that the latest NVIDIA driver is installed and running.")
QUERY_H200 = "NVIDIA H200, 9.0, 143771 MiB, 143156 MiB\n"
QUERY_OLD = "GeForce GTX 1080, 8119 MiB, 7800 MiB\n"  # r440 refuses compute_cap


class Recorded:
    """A runner that answers each command as the real tool did, and keeps what was asked."""

    def __init__(self, answers: Mapping[tuple[str, ...], tuple[int, str]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> CommandOutput | None:
        self.asked.append(tuple(argv))
        answer = self.answers.get(tuple(argv))
        if answer is None:
            return None
        return CommandOutput(argv=tuple(argv), returncode=answer[0], output=answer[1].strip())


def test_nvcc_version_files_and_their_absence() -> None:
    assert parse_nvcc_version(NVCC_10_2) == "10.2.89"
    assert parse_nvcc_version(NVCC_13_0) == "13.0.88"
    assert parse_nvcc_version("nvcc: NVIDIA (R) Cuda compiler driver\n") is None
    assert parse_version_json(VERSION_JSON_11_8) == "11.8.20220929"
    assert parse_version_json('{"cuda_cudart": {"version": "11.8.89"}}') is None
    assert parse_version_json("not json") is None
    assert parse_version_txt(VERSION_TXT_10_2) == "10.2.89"
    assert parse_version_txt("") is None


def test_driver_texts() -> None:
    assert parse_proc_driver(PROC_440) == "440.33.01"
    assert parse_proc_driver(PROC_H200) == "580.159.04"  # the open kernel module's wording
    assert parse_nvidia_smi(SMI_H200) == ("580.159.04", "13.0")
    assert parse_nvidia_smi(SMI_440) == ("440.33.01", "10.2")
    assert parse_nvidia_smi(SMI_384) == ("384.130", None)  # before r410: no CUDA version
    assert parse_nvidia_smi(SMI_NO_DRIVER) == (None, None)


def test_gpu_query_with_and_without_compute_capability() -> None:
    assert parse_gpu_query(QUERY_H200) == (Gpu(index=0, name="NVIDIA H200",
                                               compute_capability="9.0",
                                               memory_total_mib=143771,
                                               memory_free_mib=143156),)
    assert [(g.name, g.compute_capability, g.memory_total_mib)
            for g in parse_gpu_query(QUERY_OLD)] == [("GeForce GTX 1080", None, 8119)]


def _toolkit(root: Path, *, headers: bool = True,
             files: Mapping[str, str] | None = None) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "nvcc").write_text("")
    if headers:
        (root / "include").mkdir()
        (root / "include" / "cuda_runtime.h").write_text("")
    for name, text in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_version_read_from_files_first_then_nvcc(tmp_path: Path) -> None:
    as_json = _toolkit(tmp_path / "json", files={"version.json": VERSION_JSON_11_8,
                                                 "version.txt": "CUDA Version 11.0.0"})
    as_txt = _toolkit(tmp_path / "txt", files={"version.txt": VERSION_TXT_10_2})
    wheels = _toolkit(tmp_path / "wheels", files={
        "dist-info/nvidia_cuda_cccl-13.0.85.dist-info/METADATA": "",
        "dist-info/nvidia_cuda_nvcc-13.0.88.dist-info/METADATA": ""})
    bare = _toolkit(tmp_path / "bare")
    runner = Recorded({(str(bare / "bin" / "nvcc"), "--version"): (0, NVCC_13_0)})

    assert toolkit_version_of(as_json, runner) == ("11.8.20220929", "version.json")
    assert toolkit_version_of(as_txt, runner) == ("10.2.89", "version.txt")
    assert toolkit_version_of(wheels, runner) == ("13.0.88", "dist-info")
    assert runner.asked == []  # a version file spares running nvcc
    assert toolkit_version_of(bare, runner) == ("13.0.88", f"{bare / 'bin' / 'nvcc'} --version")


@pytest.mark.posix_only("a Linux PATH of real folders: ':' would split a drive letter")
def test_a_wrapper_nvcc_outside_a_toolkit_is_not_asked(tmp_path: Path) -> None:
    """This host's /usr/local/bin/nvcc is a script exec'ing the real one: /usr/local is no
    toolkit, and the toolkit is found once, where its headers are."""
    local = tmp_path / "usr-local"
    (local / "bin").mkdir(parents=True)
    (local / "bin" / "nvcc").write_text("#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc \"$@\"\n")
    real = _toolkit(local / "cuda-13.0", files={
        "dist-info/nvidia_cuda_nvcc-13.0.88.dist-info/METADATA": ""})
    runner = Recorded({})

    found = observe_toolkits({"PATH": str(local / "bin")}, platform=LINUX, search=(local,),
                             runner=runner)

    assert [(t.root, t.version, t.found_by) for t in found] == [(str(real), "13.0.88",
                                                                 str(local))]
    assert runner.asked == []


def test_a_toolkit_of_unknown_version_is_observed_but_not_picked(tmp_path: Path) -> None:
    base = tmp_path / "usr-local"
    unknown = _toolkit(base / "cuda-12.4")  # its nvcc answers nothing usable
    known = _toolkit(base / "cuda-10.2", files={"version.txt": VERSION_TXT_10_2})
    not_cuda = base / "cuda-9.0"
    not_cuda.mkdir()
    runner = Recorded({(str(unknown / "bin" / "nvcc"), "--version"): (1, "Segmentation fault")})

    observed = observe_toolkits({}, platform=LINUX, search=(base,), runner=runner)

    assert [(t.root, t.version, t.version_from) for t in observed] == [
        (str(unknown), None, "unknown"), (str(known), "10.2.89", "version.txt")]
    assert [(t.root, t.version) for t in find_toolkits({}, platform=LINUX, search=(base,),
                                                       runner=runner)] == [(known, "10.2.89")]


def test_variables_come_first_and_windows_layouts_are_found(tmp_path: Path) -> None:
    program_files = tmp_path / "Program Files"
    cuda = program_files / "NVIDIA GPU Computing Toolkit" / "CUDA"
    v10 = _toolkit(cuda / "v10.2", files={"version.txt": VERSION_TXT_10_2})
    v11 = _toolkit(cuda / "v11.8", files={"version.json": VERSION_JSON_11_8})
    env = {"ProgramFiles": str(program_files), "CUDA_PATH": str(v10), "PATH": ""}

    found = observe_toolkits(env, platform=WINDOWS)

    assert [(t.root, t.found_by) for t in found] == [(str(v10), "CUDA_PATH"),
                                                    (str(v11), str(cuda))]


@pytest.mark.posix_only("a Linux PATH of real folders: ':' would split a drive letter")
def test_driver_from_the_first_nvidia_smi_on_path(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "nvidia-smi").write_text("")
    smi = str(first / "nvidia-smi")
    runner = Recorded({(smi,): (0, SMI_H200), (smi, *GPU_QUERY): (0, QUERY_H200)})

    driver = read_driver({"PATH": f"{first}:{second}"}, platform=LINUX, runner=runner)

    assert (driver.version, driver.cuda, driver.source, driver.smi) == (
        "580.159.04", "13.0", smi, smi)
    gpus, query = read_gpus(smi, runner)
    assert [g.name for g in gpus] == ["NVIDIA H200"]
    assert query is not None and query.argv == (smi, *GPU_QUERY)


def test_an_old_driver_is_asked_for_gpus_without_compute_capability(tmp_path: Path) -> None:
    smi = str(tmp_path / "nvidia-smi")
    runner = Recorded({(smi, *GPU_QUERY): (2, 'Field "compute_cap" is not a valid field'),
                       (smi, *GPU_QUERY_OLD): (0, QUERY_OLD)})
    gpus, query = read_gpus(smi, runner)
    assert [g.name for g in gpus] == ["GeForce GTX 1080"]
    assert query is not None and query.argv == (smi, *GPU_QUERY_OLD)


@pytest.mark.posix_only("a Linux PATH of real folders: ':' would split a drive letter")
def test_a_failing_nvidia_smi_is_the_answer(tmp_path: Path) -> None:
    """Its output says why; the kernel module's file is not read instead."""
    (tmp_path / "nvidia-smi").write_text("")
    proc = tmp_path / "proc-version"
    proc.write_text(PROC_440)
    smi = str(tmp_path / "nvidia-smi")
    driver = read_driver({"PATH": str(tmp_path)}, platform=LINUX, proc_driver=proc,
                         runner=Recorded({(smi,): (9, SMI_NO_DRIVER)}))
    assert (driver.version, driver.source, driver.smi) == (None, smi, None)
    assert driver.output is not None and "couldn't communicate" in driver.output.output


def test_without_nvidia_smi_linux_reads_the_kernel_module(tmp_path: Path) -> None:
    proc = tmp_path / "proc-version"
    proc.write_text(PROC_H200)
    driver = read_driver({"PATH": ""}, platform=LINUX, proc_driver=proc, runner=Recorded({}))
    assert (driver.version, driver.cuda, driver.source) == ("580.159.04", None, str(proc))
    missing = read_driver({}, platform=LINUX, proc_driver=tmp_path / "none",
                          runner=Recorded({}))
    assert (missing.version, missing.source) == (
        None, f"no nvidia-smi on PATH and no {tmp_path / 'none'}")


def test_windows_path_is_read_as_windows_reads_it(tmp_path: Path) -> None:
    """``Path``, a quoted entry with %VARIABLES%, and NVIDIA-SMI.EXE found as nvidia-smi.exe."""
    folder = tmp_path / "NVSMI"
    folder.mkdir()
    (folder / "NVIDIA-SMI.EXE").write_text("")
    env = {"Path": 'C:\\nowhere;"%NVROOT%\\NVSMI"', "NVROOT": str(tmp_path)}
    assert path_folders(env, WINDOWS) == ("C:\\nowhere", f"{tmp_path}\\NVSMI")
    smi = str(folder / "nvidia-smi.exe")
    runner = Recorded({(smi,): (0, SMI_440)})
    driver = read_driver(env, platform=WINDOWS, folders=[str(folder)], runner=runner)
    assert (driver.version, driver.cuda, driver.source) == ("440.33.01", "10.2", smi)
    assert read_driver({}, platform=WINDOWS, runner=runner).source == "no nvidia-smi on PATH"


def _host_toolkit() -> Path | None:
    found = find_toolkits(os.environ, platform=host_platform())
    return found[0].root if found else None


@pytest.mark.skipif(_host_toolkit() is None,
                    reason="no CUDA toolkit on this host (CUDA_*, PATH, /usr/local/cuda*)")
def test_the_toolkit_installed_here_is_found_and_its_nvcc_agrees() -> None:
    """Found as apply and doctor find it, never by a path written here; its version file
    (the wheels' dist-info on this host) and its own nvcc say the same release."""
    (toolkit,) = [t for t in observe_toolkits(os.environ, platform=host_platform())
                  if t.version is not None][:1]
    root = Path(toolkit.root)
    nvcc = next(p for p in (root / "bin" / "nvcc", root / "bin" / "nvcc.exe") if p.is_file())
    out = run_command([str(nvcc), "--version"])
    assert out is not None and out.returncode == 0
    assert parse_nvcc_version(out.output) is not None
    assert toolkit.version is not None
    assert toolkit.version.split(".")[:2] == str(parse_nvcc_version(out.output)).split(".")[:2]
    print(f"{toolkit.root}: CUDA {toolkit.version} from {toolkit.version_from}")


@pytest.mark.gpu
@pytest.mark.skipif(not Path("/dev/nvidiactl").exists(), reason="needs an NVIDIA driver")
def test_the_driver_here_answers() -> None:
    driver = read_driver(os.environ)
    assert driver.version is not None, driver.source
    if driver.smi is not None:
        gpus, _ = read_gpus(driver.smi)
        assert gpus and all(g.memory_total_mib for g in gpus)


def test_windows_variables_are_read_whatever_their_case(tmp_path: Path) -> None:
    """Windows names ``Path`` and ``CUDA_Path`` as it likes; the toolkit is found either way."""
    v11 = _toolkit(tmp_path / "v11.8", files={"version.json": VERSION_JSON_11_8})
    (v11 / "bin" / "nvcc.exe").write_text("")
    via_path = observe_toolkits({"Path": str(v11 / "bin"), "ProgramFiles": str(tmp_path)},
                                platform=WINDOWS)
    via_variable = observe_toolkits({"cuda_path": str(v11), "PROGRAMFILES": str(tmp_path)},
                                    platform=WINDOWS)
    assert [t.found_by for t in via_path] == ["PATH (nvcc)"]
    assert [t.found_by for t in via_variable] == ["CUDA_PATH"]


# What only a tool's own output says: its parsing lives in host/cuda.py alone. The probe runs
# inside the environment's Python 3.7 and cannot import envforge: it reads nvidia-smi itself.
_PARSING = ("Driver Version", "Kernel Module", "compilation tools", "release (\\d", "--query-gpu")
_ALLOWED = {"host/cuda.py", "packs/theano/probe_sections.py"}


def test_cuda_output_is_parsed_in_one_place() -> None:
    package = Path(__file__).resolve().parents[2] / "envforge"
    copies = sorted(f"{path.relative_to(package).as_posix()}: {marker}"
                    for path in package.rglob("*.py")
                    if path.relative_to(package).as_posix() not in _ALLOWED
                    for marker in _PARSING if marker in path.read_text(encoding="utf-8"))
    assert copies == []

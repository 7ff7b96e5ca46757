"""Real layouts for doctor's tests: CUDA trees (Linux and Windows shapes), cuDNN headers,
environments with package metadata, and executable scripts standing in for nvidia-smi and
g++ that print what the real tools print on the machines named beside each text."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from envforge.doctor import Expected, HostFacts, diagnose, observe
from envforge.doctor.model import Finding
from envforge.host.windows import RegistrySeam
from envforge.spec import Platform
from tests.testing.packs import REGISTRY

# nvidia-smi on the H200 host (driver 580.159.04), captured for these tests.
SMI_H200 = """\
Mon Nov 30 04:04:38 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                    0 |
| N/A   36C    P0            115W /  700W |       0MiB / 143771MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|  No running processes found                                                             |
+-----------------------------------------------------------------------------------------+
"""
QUERY_H200 = "NVIDIA H200, 9.0, 143771 MiB, 143156 MiB\n"

# nvidia-smi 441.22 (the CUDA 10.2 driver) on Windows 10 with a GTX 1660 SUPER.
SMI_441 = """\
Sat Dec 14 10:21:33 2019
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 441.22       Driver Version: 441.22       CUDA Version: 10.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 166... WDDM  | 00000000:01:00.0  On |                  N/A |
| 40%   34C    P8    10W / 125W |    513MiB /  6144MiB |      2%      Default |
+-------------------------------+----------------------+----------------------+
"""
QUERY_441 = "GeForce GTX 1660 SUPER, 6144 MiB, 5631 MiB\n"

# What nvidia-smi prints when the kernel module is not loaded.
SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                 "Make sure that the latest NVIDIA driver is installed and running.\n")

# `g++ -v` of Debian 12's g++ 12.2.0 and of MinGW-w64 8.1.0 builds (posix and win32 threads).
GXX_DEBIAN = """\
Using built-in specs.
COLLECT_GCC=g++
COLLECT_LTO_WRAPPER=/usr/lib/gcc/x86_64-linux-gnu/12/lto-wrapper
Target: x86_64-linux-gnu
Configured with: ../src/configure -v --with-pkgversion='Debian 12.2.0-14+deb12u1' \
--enable-threads=posix
Thread model: posix
Supported LTO compression algorithms: zlib zstd
gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)
"""


def gxx_mingw(threads: str) -> str:
    return textwrap.dedent(f"""\
        Using built-in specs.
        COLLECT_GCC=C:\\mingw64\\bin\\g++.exe
        Target: x86_64-w64-mingw32
        Configured with: ../../../src/gcc-8.1.0/configure --host=x86_64-w64-mingw32 \
--enable-threads={threads} --with-pkgversion='x86_64-{threads}-seh-rev0, Built by MinGW-W64 project'
        Thread model: {threads}
        gcc version 8.1.0 (x86_64-{threads}-seh-rev0, Built by MinGW-W64 project)
        """)


def script(folder: Path, name: str, body: str) -> Path:
    """An executable shell script: the stand-in for a tool where none exists."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _heredoc(text: str) -> str:
    return f"cat <<'EOF_OUTPUT'\n{text.rstrip(chr(10))}\nEOF_OUTPUT\n"


def nvidia_smi(folder: Path, *, table: str = SMI_H200, query: str = QUERY_H200,
               compute_cap: bool = True, name: str = "nvidia-smi",
               fails: str | None = None) -> Path:
    """nvidia-smi: the table without arguments, CSV for --query-gpu; an old driver refuses
    the compute_cap field as the real one does."""
    if fails is not None:
        return script(folder, name, _heredoc(fails) + "exit 9\n")
    refuse = ('case "$*" in *compute_cap*) echo \'Field "compute_cap" is not a valid field '
              'to query.\'; exit 2;; esac\n') if not compute_cap else ""
    return script(folder, name, f"""\
{refuse}case "$*" in
  *--query-gpu*) {_heredoc(query).strip()}
  exit 0;;
esac
{_heredoc(table)}""")


def gxx(folder: Path, output: str = GXX_DEBIAN, name: str = "g++") -> Path:
    return script(folder, name, f'if [ "$1" = "-v" ]; then\n{_heredoc(output)}'
                                f"exit 0\nfi\nexit 1\n")


def cudnn_header(include: Path, version: str) -> Path:
    """cuDNN's header as NVIDIA ships it: cudnn.h up to 7, cudnn_version.h from 8 on."""
    major, minor, patch = version.split(".")[:3]
    include.mkdir(parents=True, exist_ok=True)
    defines = textwrap.dedent(f"""\
        #define CUDNN_MAJOR {major}
        #define CUDNN_MINOR {minor}
        #define CUDNN_PATCHLEVEL {patch}

        #define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
        """)
    if int(major) >= 8:
        (include / "cudnn.h").write_text('/* cudnn */\n#include "cudnn_version.h"\n')
        target = include / "cudnn_version.h"
        target.write_text(f"/* cudnn_version.h */\n#ifndef CUDNN_VERSION_H_\n{defines}#endif\n")
        return target
    target = include / "cudnn.h"
    target.write_text(f"/* cudnn : Neural Networks Library */\n#if !defined(CUDNN_H_)\n"
                      f"#define CUDNN_H_\n\n{defines}#endif /* CUDNN_H_ */\n")
    return target


def linux_cuda(base: Path, version: str, *, libs: bool = True) -> Path:
    """/usr/local/cuda-X.Y: version.json (11.1+) or version.txt, headers, lib64 runtime."""
    major_minor = ".".join(version.split(".")[:2])
    root = base / f"cuda-{major_minor}"
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda_runtime.h").write_text("/* cuda_runtime.h */\n")
    (root / "bin").mkdir()
    if tuple(map(int, version.split(".")[:2])) >= (11, 1):
        (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK",
                                                                "version": version}}))
    else:
        (root / "version.txt").write_text(f"CUDA Version {version}\n")
    lib = root / "lib64"
    lib.mkdir()
    if libs:
        major = int(version.split(".")[0])
        soname = f"libcudart.so.{major}" if major >= 11 else f"libcudart.so.{major_minor}"
        (lib / f"{soname}.0").write_bytes(b"\x7fELF cudart")
        (lib / soname).symlink_to(f"{soname}.0")
        for name in ("libnvrtc", "libcublas"):
            real = lib / f"{name}.so.{major}"
            real.write_bytes(b"\x7fELF " + name.encode())
    return root


WINDOWS_CUDA_BIN = {
    "9.0": ("cudart64_90.dll", "nvrtc64_90.dll", "cublas64_90.dll"),
    "10.2": ("cudart64_102.dll", "nvrtc64_102_0.dll", "cublas64_10.dll"),
    "11.0": ("cudart64_110.dll", "nvrtc64_110_0.dll", "cublas64_11.dll"),
}


def windows_cuda(program_files: Path, version: str) -> Path:
    """C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\vX.Y as the installer lays it out."""
    root = program_files / "NVIDIA GPU Computing Toolkit" / "CUDA" / f"v{version}"
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("/* cuda_runtime.h */\n")
    (root / "lib" / "x64").mkdir(parents=True)
    (root / "lib" / "x64" / "cudart.lib").write_bytes(b"!<arch>\n")
    full = {"9.0": "9.0.176", "10.2": "10.2.89", "11.0": "11.0.194"}[version]
    (root / "version.txt").write_text(f"CUDA Version {full}\n")
    for dll in WINDOWS_CUDA_BIN[version]:
        (root / "bin" / dll).write_bytes(b"MZ " + dll.encode())
    script(root / "bin", "nvcc.exe", "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n")
    return root


def venv(prefix: Path, packages: Mapping[str, str], *, python: str = "3.7.16") -> Path:
    """A venv as `python -m venv` and pip leave it: pyvenv.cfg and dist-info folders."""
    minor = ".".join(python.split(".")[:2])
    site = prefix / "lib" / f"python{minor}" / "site-packages"
    site.mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text(f"home = /usr/bin\ninclude-system-site-packages = false\n"
                                       f"version = {python}\n")
    for name, version in packages.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"  # as pip names it
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n"
                                       f"Version: {version}\n")
    return prefix


def conda_env(prefix: Path, packages: Mapping[str, str]) -> Path:
    """A conda environment's conda-meta records (one JSON per package)."""
    meta = prefix / "conda-meta"
    meta.mkdir(parents=True)
    for name, version in packages.items():
        (meta / f"{name}-{version}-0.json").write_text(json.dumps(
            {"name": name, "version": version, "build": "0", "channel": "conda-forge"}))
    return prefix


def home(tmp: Path, theanorc: str | None = None, *, name: str = ".theanorc") -> Path:
    folder = tmp / "home"
    folder.mkdir(exist_ok=True)
    if theanorc is not None:
        (folder / name).write_bytes(theanorc.encode())
    return folder


def look(tmp: Path, environ: Mapping[str, str], *, platform: Platform = "linux-64",
         cwd: Path | None = None, prefix: Path | None = None,
         lib_dirs: Sequence[Path] = (), include_dirs: Sequence[Path] = (),
         cuda_search: tuple[Path, ...] = (), python: str = "3.7",
         expected_flags: Mapping[str, str] | None = None,
         registry: RegistrySeam | None = None,
         ldconfig: Sequence[str] = ("true",)) -> HostFacts:
    """Observe a world built under ``tmp``; nothing of the real host leaks in (the loader
    cache is what ``ldconfig`` — by default a command that lists nothing — prints)."""
    return observe(environ=environ, platform=platform, cwd=cwd or tmp, prefix=prefix,
                   cuda_search=cuda_search, system_lib_dirs=lib_dirs,
                   system_include_dirs=include_dirs, proc_driver=tmp / "no-proc-driver",
                   python=python, expected_settings={"theano": expected_flags or {}},
                   registry=registry,
                   ldconfig=ldconfig, packs=REGISTRY)


def ids(findings: Sequence[Finding]) -> list[str]:
    return [f.id for f in findings]


def only(findings: Sequence[Finding], finding_id: str) -> Finding:
    found = [f for f in findings if f.id == finding_id]
    assert len(found) == 1, f"expected one {finding_id}, got {ids(findings)}"
    return found[0]


def judge(facts: HostFacts, expected: Expected | None = None) -> tuple[Finding, ...]:
    return diagnose(facts, expected, packs=REGISTRY)


def expected(**changes: object) -> Expected:
    """A lock's expectations for a GPU spec; tests change what they judge."""
    base: dict[str, object] = dict(
        spec="specs/theano-cuda102.toml", platform="linux-64", prefix="/nonexistent/env",
        env_kind="conda", cuda="10.2", cudnn="7.6.5.32",
        versions={"python": "3.7", "theano": "1.0.5", "numpy": "1.19.5", "pygpu": "0.7.6"},
        device="cuda", settings={"theano": {"device": "cuda", "floatX": "float32"}})
    base.update(changes)
    return Expected.model_validate(base)

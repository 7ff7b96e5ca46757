"""Observing real layouts, Linux- and Windows-shaped, into HostFacts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envforge.doctor import HostFacts, observe
from envforge.doctor.facts import FrameworkConfig
from envforge.host.cuda import parse_gpu_query
from envforge.host.windows import USER_ENVIRONMENT, RecordingRegistry
from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from envforge.packs.base import PackDefaults
from envforge.packs.theano.doctor_common import theano_config
from tests.doctor.layouts import (
    QUERY_441,
    SMI_441,
    SMI_NO_DRIVER,
    conda_env,
    cudnn_header,
    gxx,
    gxx_mingw,
    home,
    linux_cuda,
    look,
    nvidia_smi,
    venv,
    windows_cuda,
)
from tests.testing.packs import REGISTRY


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_linux_host(tmp_path: Path) -> None:
    tools = tmp_path / "usr" / "bin"
    nvidia_smi(tools)
    gxx(tools)
    cuda = linux_cuda(tmp_path / "usr" / "local", "11.8.89")
    cudnn_header(cuda / "include", "8.9.7")
    rc = home(tmp_path, "[global]\nfloatx = float32\ndevice = cuda\n\n[dnn]\nenabled = False\n")
    env = {"PATH": f"{tools}:{cuda / 'bin'}", "HOME": str(rc), "CUDA_PATH": str(cuda),
           "LD_LIBRARY_PATH": f"{cuda / 'lib64'}", "THEANO_FLAGS": "floatX=float32",
           "AWS_SECRET_ACCESS_KEY": "not-for-reports"}

    facts = look(tmp_path, env)

    assert facts.driver.version == "580.159.04" and facts.driver.cuda == "13.0"
    assert [(g.name, g.compute_capability, g.memory_total_mib, g.memory_free_mib)
            for g in facts.gpus] == [("NVIDIA H200", "9.0", 143771, 143156)]
    assert [(t.root, t.version, t.found_by) for t in facts.toolkits] == [
        (str(cuda), "11.8.89", "CUDA_PATH")]
    assert facts.toolkits[0].cudnn is not None
    assert facts.toolkits[0].cudnn.version == "8.9.7"
    assert facts.toolkits[0].cudnn.file.endswith("cudnn_version.h")
    assert facts.gxx is not None and facts.gxx.thread_model == "posix"
    assert facts.gxx.version == "12.2.0" and facts.gxx.path == str(tools / "g++")
    assert theano_config(facts).files[0].flags == {"floatX": "float32", "device": "cuda",
                                       "dnn.enabled": "False"}
    assert theano_config(facts).files[0].lines == {"floatX": 2, "device": 3, "dnn.enabled": 6}
    assert theano_config(facts).cuda_root == str(cuda)
    assert "libcudart.so.11" in facts.dirs[str(cuda / "lib64")].names
    assert "AWS_SECRET_ACCESS_KEY" not in facts.environ  # never in --json or a report
    back = HostFacts.model_validate_json(facts.model_dump_json(), context={"registry": REGISTRY})
    assert back == facts
    # Theano's own part (the .theanorc a fix writes) is its pack's model, read back as such
    assert theano_config(facts).write_to.endswith(".theanorc")
    assert theano_config(back).write_to == theano_config(facts).write_to
    assert "write_to" not in FrameworkConfig.model_fields


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_windows_host_on_any_machine(tmp_path: Path) -> None:
    """PATH split on ';', DLLs in folders, nvcc.exe never Theano's `nvcc`, .theanorc.txt wins."""
    program_files = tmp_path / "Program Files"
    cuda = windows_cuda(program_files, "10.2")
    mingw = tmp_path / "mingw64" / "bin"
    gxx(mingw, gxx_mingw("posix"), name="g++.exe")
    system32 = tmp_path / "Windows" / "System32"
    nvidia_smi(system32, table=SMI_441, query=QUERY_441, compute_cap=False,
               name="nvidia-smi.exe")
    profile = home(tmp_path, "[global]\ndevice = cpu\n")
    (profile / ".theanorc.txt").write_text("[global]\r\ndevice = cuda\r\n")
    env = {"Path": f"{mingw};%CUDA_PATH%\\bin;{system32}", "CUDA_PATH": str(cuda),
           "USERPROFILE": str(profile)}

    facts = look(tmp_path, env, platform="win-64")

    assert [e.path for e in facts.path] == [str(mingw), f"{cuda}\\bin", str(system32)]
    assert facts.driver.version == "441.22" and facts.driver.cuda == "10.2"
    # 441.22 predates the compute_cap field: the older query still gives memory
    assert [(g.name, g.compute_capability, g.memory_free_mib) for g in facts.gpus] == [
        ("GeForce GTX 1660 SUPER", None, 5631)]
    assert facts.gxx is not None and facts.gxx.path_index == 0
    files = theano_config(facts).files
    assert [Path(f.path).name for f in files] == [".theanorc", ".theanorc.txt"]
    assert files[1].flags == {"device": "cuda"}
    assert theano_config(facts).cuda_root == str(cuda)  # from CUDA_PATH, not a PATH `nvcc`
    assert facts.toolkits[0].version == "10.2.89"
    assert facts.holds(str(cuda / "bin"), "CUDART64_102.DLL")  # Windows names fold case


def test_pip_installed_toolkit_reads_its_version_from_dist_info(tmp_path: Path) -> None:
    root = tmp_path / "cuda-13.0"
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda_runtime.h").write_text("")
    for name in ("nvidia_cuda_cccl-13.0.85", "nvidia_cuda_nvcc-13.0.88",
                 "nvidia_cuda_runtime-13.0.96"):
        (root / "dist-info" / f"{name}.dist-info").mkdir(parents=True)
    facts = look(tmp_path, {"CUDA_HOME": str(root), "HOME": str(home(tmp_path))})
    assert [(t.version, t.version_from) for t in facts.toolkits] == [
        ("13.0.88", "dist-info")]


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_toolkit_without_version_files_asks_nvcc(tmp_path: Path) -> None:
    root = tmp_path / "cuda"
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda.h").write_text("")
    from tests.doctor.layouts import script

    script(root / "bin", "nvcc", "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                                 "echo 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    facts = look(tmp_path, {"CUDA_ROOT": str(root), "HOME": str(home(tmp_path))})
    assert [(t.version, t.version_from) for t in facts.toolkits] == [
        ("12.4.131", f"{root / 'bin' / 'nvcc'} --version")]


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_driver_that_does_not_answer(tmp_path: Path) -> None:
    nvidia_smi(tmp_path / "bin", fails=SMI_NO_DRIVER)
    facts = look(tmp_path, {"PATH": str(tmp_path / "bin"), "HOME": str(home(tmp_path))})
    assert facts.driver.version is None
    assert facts.driver.output is not None and facts.driver.output.returncode == 9
    assert "couldn't communicate" in facts.driver.output.output


@pytest.mark.parametrize(("text", "version"), [
    # the open kernel modules, as on the H200 host
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
     "(nixbld@)\nGCC version:  gcc version 15.3.0 (GCC)\n", "580.159.04"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  440.33.01  Wed Nov 13 00:00:22 UTC 2019\n"
     "GCC version:  gcc version 7.4.0 (Ubuntu 7.4.0-1ubuntu1~18.04.1)\n", "440.33.01")])
def test_driver_from_proc_when_no_nvidia_smi(tmp_path: Path, text: str, version: str) -> None:
    proc = tmp_path / "version"
    proc.write_text(text)
    facts = observe(environ={"PATH": "", "HOME": str(home(tmp_path))}, platform="linux-64",
                    cwd=tmp_path, cuda_search=(), system_lib_dirs=(), system_include_dirs=(),
                    proc_driver=proc, packs=REGISTRY)
    assert (facts.driver.version, facts.driver.source) == (version, str(proc))


class _LoaderPack(PackDefaults):
    """A pack whose framework dlopens one library by its unversioned name."""

    name = "loader"

    def dlopen_names(self) -> tuple[str, ...]:
        return ("libfoo.so",)


@pytest.mark.posix_only("its stand-in ldconfig is an sh script")
def test_the_loader_cache_is_read_for_the_names_the_packs_dlopen(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    ldconfig = tmp_path / "ldconfig"
    ldconfig.write_text(f"#!/bin/sh\ntouch '{ran}'\ncat <<'OUT'\n"
                        "2 libs found in cache `/etc/ld.so.cache'\n"
                        "\tlibfoo.so (libc6,x86-64) => /opt/foo/libfoo.so\n"
                        "\tlibnvrtc.so (libc6,x86-64) => /opt/cuda/libnvrtc.so\nOUT\n")
    ldconfig.chmod(0o755)

    def cache(packs: Registry[_LoaderPack] | Registry[FrameworkPack]) -> dict[str, str]:
        return observe(environ={"PATH": "", "HOME": str(home(tmp_path))}, platform="linux-64",
                       cwd=tmp_path, cuda_search=(), system_lib_dirs=(), system_include_dirs=(),
                       proc_driver=tmp_path / "no-proc-driver", ldconfig=(str(ldconfig), "-p"),
                       packs=packs).ld_cache

    assert cache(Registry([_LoaderPack()])) == {"libfoo.so": "/opt/foo/libfoo.so"}
    assert cache(REGISTRY) == {"libnvrtc.so": "/opt/cuda/libnvrtc.so"}  # Theano's libgpuarray
    ran.unlink()
    assert cache(Registry([])) == {}
    assert not ran.exists()  # no pack names a library: ldconfig is not run


def test_gpu_query_lines() -> None:
    assert [(g.index, g.name, g.compute_capability) for g in parse_gpu_query(
        "NVIDIA H200, 9.0, 143771 MiB, 143156 MiB\nTesla K80, 3.7, 11441 MiB, 11378 MiB\n")] \
        == [(0, "NVIDIA H200", "9.0"), (1, "Tesla K80", "3.7")]


def test_environment_read_from_metadata(tmp_path: Path) -> None:
    prefix = venv(tmp_path / "env", {"Theano_PyMC": "1.0.5", "numpy": "1.19.5"})
    (prefix / "lib" / "python3.7" / "site-packages" / "pygpu-0.7.6-py3.7.egg-info").write_text("")
    facts = look(tmp_path, {"HOME": str(home(tmp_path)), "VIRTUAL_ENV": str(prefix)})
    assert facts.env is not None and facts.env.found_by == "VIRTUAL_ENV"
    assert facts.env.versions == {"python": "3.7.16", "theano": "1.0.5", "numpy": "1.19.5",
                                  "pygpu": "0.7.6"}
    conda = conda_env(tmp_path / "conda", {"theano-pymc": "1.0.5", "pygpu": "0.7.6"})
    facts = look(tmp_path, {"HOME": str(home(tmp_path)), "CONDA_PREFIX": str(conda)})
    assert facts.env is not None and facts.env.versions == {"theano": "1.0.5", "pygpu": "0.7.6"}


@pytest.mark.posix_only("observes a linux-64 host: its '/'-joined paths, ':' lists and sh fixes")
def test_spec_environment_is_seen_activated(tmp_path: Path) -> None:
    """With a spec, the environment's own activation (THEANORC, PATH) is applied first."""
    prefix = venv(tmp_path / "env", {"numpy": "1.19.5"})
    (prefix / "etc").mkdir()
    (prefix / "etc" / "theanorc").write_text("[global]\ndevice = cpu\n")
    (prefix / "envforge-env.json").write_text(json.dumps([
        {"name": "PATH", "op": "prepend", "value": str(prefix / "bin")},
        {"name": "THEANORC", "op": "set", "value": str(prefix / "etc" / "theanorc")}]))
    facts = look(tmp_path, {"HOME": str(home(tmp_path)), "PATH": "/nowhere"}, prefix=prefix)
    assert facts.env is not None and facts.env.activated and facts.env.found_by == "spec"
    assert [f.path for f in theano_config(facts).files] == [str(prefix / "etc" / "theanorc")]
    assert [e.path for e in facts.path] == [str(prefix / "bin"), "/nowhere"]


def test_registry_path_for_new_shells(tmp_path: Path) -> None:
    registry = RecordingRegistry({(USER_ENVIRONMENT, "Path"): (r"%USERPROFILE%\mingw64\bin", 2)})
    facts = look(tmp_path, {"USERPROFILE": r"C:\Users\me", "PATH": r"C:\Windows"},
                 platform="win-64", registry=registry)
    assert facts.registry_path is not None
    assert facts.registry_path.entries == (r"C:\Users\me\mingw64\bin",)


@pytest.mark.skipif(not Path("/usr/local/cuda").is_dir(), reason="needs a CUDA toolkit")
def test_this_host() -> None:
    """The real host, observed with the defaults the command uses."""
    import os

    facts = observe(environ=dict(os.environ), platform="linux-64", cwd=Path.cwd(),
                    packs=REGISTRY)
    assert any(Path(t.root).resolve() == Path("/usr/local/cuda").resolve()
               for t in facts.toolkits)
    assert all(t.version for t in facts.toolkits)
    which = shutil.which("g++")
    assert (facts.gxx.path if facts.gxx else None) == which

"""The CUDA check: toolkits found in CUDA-shaped trees, the driver read from a stand-in
nvidia-smi that prints what the real one prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.errors import StepError
from envforge.steps.cuda import CudaToolkitStep, select_toolkit
from tests.testing.contexts import make_ctx

SMI = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI {driver}             Driver Version: {driver}     CUDA Version: {cuda}     |
+-----------------------------------------+------------------------+----------------------+
"""


def toolkit(base: Path, version: str, *, as_json: bool) -> Path:
    root = base / f"cuda-{'.'.join(version.split('.')[:2])}"
    (root / "bin").mkdir(parents=True)
    if as_json:
        (root / "version.json").write_text(f'{{"cuda": {{"name": "CUDA SDK", '
                                           f'"version": "{version}"}}}}')
    else:
        (root / "version.txt").write_text(f"CUDA Version {version}\n")
    return root


def fake_smi(folder: Path, driver: str, cuda: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\ncat <<'OUT'\n" + SMI.format(driver=driver, cuda=cuda) + "OUT\n")
    script.chmod(0o755)
    return folder


@pytest.fixture
def trees(tmp_path: Path) -> Path:
    base = tmp_path / "usr-local"
    toolkit(base, "10.2.89", as_json=False)
    toolkit(base, "13.0.48", as_json=True)
    return base


def test_exact_and_minimum_versions_pick_the_right_tree(tmp_path: Path, trees: Path) -> None:
    smi = fake_smi(tmp_path / "bin", "580.159.04", "13.0")
    for wanted, found in (("10.2", "10.2.89"), (">=11.8", "13.0.48")):
        ctx = make_ctx(tmp_path, "linux-64", None, environ={"PATH": str(smi)}, cuda=wanted,
                       cuda_search=(trees,))
        assert select_toolkit(ctx).version == found
        assert CudaToolkitStep().describe(ctx) == ()
        # what later steps (cuDNN, links, PATH, activation) get as the CUDA root
        assert CudaToolkitStep().facts(ctx).cuda_root == trees / f"cuda-{found[:4]}"


def test_missing_toolkit_names_the_locked_installer(tmp_path: Path, trees: Path) -> None:
    ctx = make_ctx(tmp_path, "linux-64", None, cuda="11.0", cuda_search=(trees,))
    with pytest.raises(StepError, match=r"CUDA 11.0 not found \(found: 13.0.48 .*10.2.89"):
        select_toolkit(ctx)


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_driver_too_old_for_the_toolkit_is_refused_with_its_source(tmp_path: Path,
                                                                   trees: Path) -> None:
    old = fake_smi(tmp_path / "old", "418.87.01", "10.1")
    ctx = make_ctx(tmp_path, "linux-64", None, environ={"PATH": str(old)}, cuda="10.2",
                   cuda_search=(trees,))
    with pytest.raises(StepError, match=r"418.87.01 is too old for CUDA 10.2: it needs >= "
                                        r"440.33 \(source: NVIDIA"):
        CudaToolkitStep().describe(ctx)
    new = fake_smi(tmp_path / "new", "440.33.01", "10.2")
    ok = make_ctx(tmp_path, "linux-64", None, environ={"PATH": str(new)}, cuda="10.2",
                  cuda_search=(trees,))
    assert CudaToolkitStep().describe(ok) == ()


@pytest.mark.posix_only("its stand-in nvidia-smi, nvcc or g++ is an sh script")
def test_toolkit_without_version_files_is_read_from_nvcc(tmp_path: Path) -> None:
    """As on the H200 host: /usr/local/cuda with bin/nvcc and no version.json or dist-info."""
    root = tmp_path / "usr-local" / "cuda"
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "include" / "cuda.h").write_text("")
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                    "echo 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    nvcc.chmod(0o755)
    ctx = make_ctx(tmp_path, "linux-64", None, cuda=">=11.8", cuda_search=(root.parent,))
    assert select_toolkit(ctx).version == "13.0.88"

"""A README's statements of its environment (importers/readme.py), read from real READMEs'
lines, and kept only for what the code imports (init, with no dependency file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.app.packs import installed_packs
from envforge.importers import Found, Imported, Skipped
from envforge.importers.codeimports import UNKNOWN
from envforge.importers.readme import NOTE, clone_for, of_imported, read_readme, readme_name

# utkuozbulak/pytorch-cnn-visualizations 16eddfa (2020-09-09) README.md:365-372
CNN_VISUALIZATIONS = """Some of these techniques are implemented in *generate.py*.

## Requirements:
```
torch == 0.4.1
torchvision >= 0.1.9
numpy >= 1.13.0
matplotlib >= 1.5
PIL >= 1.1.7
```
"""

# salesforce/awd-lstm-lm README.md:44-52: PyTorch 0.4 now, 0.1.12 for an older commit
AWD_LSTM = """## Software Requirements

Python 3 and PyTorch 0.4 are required for the current codebase.

If you need an earlier version, the [PyTorch==0.1.12](https://github.com/x) release, with
Python 3 and PyTorch 0.1.12 are required.
`conda install pytorch=0.1.12 -c soumith`.
"""

# siqueira-hc/Efficient-Facial-Feature-Learning README.md:41-47, a label line and a list
FACIAL = """Main python libraries used in our framework:
- matplotlib 3.0.3
- numpy 1.17.4
- opencv-python 4.1.2.30
- Pillow 5.0.0
- torch 1.0.0
- torchvision 0.2.1
"""


def _stated(text: str) -> list[tuple[str, str]]:
    return [(f.requirement, f.origin) for f in read_readme("README.md", text).requirements]


def test_a_requirements_blocks_lines_are_requirements_at_their_lines() -> None:
    assert _stated(CNN_VISUALIZATIONS) == [
        ("torch==0.4.1", "README.md:5"), ("torchvision>=0.1.9", "README.md:6"),
        ("numpy>=1.13.0", "README.md:7"), ("matplotlib>=1.5", "README.md:8"),
        ("PIL>=1.1.7", "README.md:9")]
    assert all(f.note == NOTE for f in read_readme("README.md", CNN_VISUALIZATIONS).requirements)


def test_prose_names_a_release_line_one_release_or_a_floor() -> None:
    stated = read_readme("README.md", AWD_LSTM)
    assert [f.requirement for f in stated.requirements] == [
        "PyTorch==0.4.*", "PyTorch==0.1.12", "torch==0.1.12"]  # conda's name mapped
    assert stated.python == []  # "Python 3" says too little
    assert _stated(FACIAL) == [
        ("matplotlib==3.0.3", "README.md:2"), ("numpy==1.17.4", "README.md:3"),
        ("opencv-python==4.1.2.30", "README.md:4"), ("Pillow==5.0.0", "README.md:5"),
        ("torch==1.0.0", "README.md:6"), ("torchvision==0.2.1", "README.md:7")]
    text = ("Prerequisites\n-------------\n\n* Python 3.6+\n* TensorFlow v1.4 or later\n"
            "* **Keras** 2.1.2\n\n| package | version |\n|---|---|\n| h5py | 2.7.1 |\n")
    stated = read_readme("README.rst", text)
    assert [f.requirement for f in stated.requirements] == [
        "TensorFlow>=1.4", "Keras==2.1.2", "h5py==2.7.1"]
    assert stated.python == [(">=3.6", "README.rst:4")]


def test_only_sections_of_the_environment_and_install_commands_count() -> None:
    text = ("# Results\n\nWe beat ResNet 1.5 by a margin on ImageNet 2012.\n\n"
            "## Installation\n\n```bash\n$ pip install tensorflow-gpu==1.12.0 h5py\n```\n\n"
            "## Training\n\nRun `pip install keras==2.2.4` first. Train for 3.5 days.\n"
            "## Setup\nUbuntu 16.04, CUDA 9.0 and cuDNN 7.1; python3.6\n")
    stated = read_readme("README.md", text)
    assert [(f.requirement, f.origin) for f in stated.requirements] == [
        ("tensorflow-gpu==1.12.0", "README.md:8"), ("h5py", "README.md:8"),
        ("keras==2.2.4", "README.md:13"), ("Ubuntu==16.04.*", "README.md:15"),
        ("CUDA==9.0.*", "README.md:15"), ("cuDNN==7.1.*", "README.md:15")]
    assert stated.python == [("==3.6", "README.md:15")]


def test_only_what_the_code_imports_is_kept_the_first_statement_of_each() -> None:
    imported = Imported(requirements=[Found("torch", "main.py:1"), Found("numpy", "main.py:2")])
    kept = of_imported(read_readme("README.md", AWD_LSTM), imported, installed_packs())
    assert [(f.requirement, f.origin) for f in kept.requirements] == [
        ("PyTorch==0.4.*", "README.md:3")]
    text = "## Setup\nUbuntu 16.04, CUDA 9.0, Python 3.6, tensorflow-gpu 1.4.0, mymodel 0.1.0\n"
    kept = of_imported(read_readme("README.md", text),
                       Imported(requirements=[Found("tensorflow", "a.py:1")]), installed_packs())
    assert [f.requirement for f in kept.requirements] == ["tensorflow-gpu==1.4.0"]
    assert kept.python == [("==3.6", "README.md:2")]


def test_the_readme_is_found_by_any_case_of_its_name() -> None:
    assert readme_name(["setup.py", "Readme.MD", "README.txt"]) == "Readme.MD"
    assert readme_name(["readme"]) == "readme"
    assert readme_name(["main.py", "READ_ME.md"]) is None


def test_init_pins_what_the_readme_states_for_a_repository_with_no_dependency_file(
        tmp_path: Path) -> None:
    """pytorch-cnn-visualizations' shape: code that imports torch, a README that names its
    release; drafted offline (no index), the README's pins stand with their lines."""
    from envforge.app.drafting import draft_spec

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "README.md").write_text(CNN_VISUALIZATIONS, encoding="utf-8")
    (repo / "src" / "gradcam.py").write_text(
        "import torch\nimport numpy as np\nfrom PIL import Image\nimport cv2\nimport lmdb\n"
        "import warpctc_pytorch\n", encoding="utf-8")
    with (repo / "README.md").open("a", encoding="utf-8") as readme:
        readme.write("\n```\npip install lmdb\n```\n")
    draft = draft_spec(repo, source="repo", name="repo", platform="linux-64", lookup=None,
                       commit_day=None)
    found = {f.requirement: f.origin for f in draft.repository.imported.requirements}
    assert found["torch==0.4.1"].startswith("README.md:5")
    assert found["numpy>=1.13.0"].startswith("README.md:7")
    assert "opencv-python" in found and "Pillow" in found  # imports beside, unpinned
    assert found["lmdb"] == "README.md:13"  # a module no knowledge names, by its own name
    assert not any(r.startswith(("torchvision", "matplotlib", "PIL")) for r in found)
    assert [s.what for s in draft.repository.imported.skipped] == ["warpctc_pytorch"]


@pytest.mark.parametrize("kind", [
    pytest.param("link", marks=pytest.mark.posix_only("a symbolic link")), "binary"])
def test_a_readme_that_cannot_be_read_is_passed_over(tmp_path: Path, kind: str) -> None:
    """Evidence, never required: a README linked out of the repository, or holding NUL
    bytes, leaves the draft to the code's imports (init does not stop)."""
    from envforge.app.drafting import draft_spec

    outside = tmp_path / "outside.md"
    outside.write_text(CNN_VISUALIZATIONS, encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "main.py").write_text("import torch\n", encoding="utf-8")
    if kind == "link":
        (repo / "README.md").symlink_to(outside)
    else:
        (repo / "README.md").write_bytes(b"## Requirements\ntorch == 0.4.1\x00\n")
    draft = draft_spec(repo, source=kind, name=kind, platform="linux-64", lookup=None,
                       commit_day=None)
    assert [f.requirement for f in draft.repository.imported.requirements] == ["torch"]


def test_what_follows_tested_with_counts_outside_a_section() -> None:
    """rykov8/ssd_keras a560b91 (2017-03-07) README.md:8, under no heading of its own."""
    text = ("# A port of SSD to Keras\n\nThis code was tested with `Keras` v1.2.2, "
            "`Tensorflow` v1.0.0, `OpenCV` v3.1.0-dev\n\nWe trained for 10.5 epochs.\n")
    assert _stated(text) == [("Keras==1.2.2", "README.md:3"),
                             ("Tensorflow==1.0.0", "README.md:3")]


def test_a_line_that_both_states_and_installs_gives_both() -> None:
    """clovaai/deep-text-recognition-benchmark 68a80fe (2020-12-11) README.md:24-26: its
    Python is in the sentence, its torch in the inline install command beside it."""
    text = ("## Getting Started\n### Dependency\n- This work was tested with PyTorch 1.3.1, "
            "CUDA 10.1, python 3.6 and Ubuntu 16.04. <br> You may need "
            "`pip3 install torch==1.3.1`. <br>\n")
    stated = read_readme("README.md", text)
    assert [f.requirement for f in stated.requirements] == [
        "torch==1.3.1", "PyTorch==1.3.1", "CUDA==10.1.*"]  # "Ubuntu 16.04. <br> You…": no
    assert stated.python == [("==3.6", "README.md:3")]


def test_a_module_no_knowledge_names_is_the_distribution_the_readme_installs() -> None:
    """clovaai's README installs lmdb, natsort and fire, which its code imports by those
    names: each becomes a requirement (a module no knowledge names was left to the user)."""
    text = ("### Dependency\n```\npip3 install lmdb pillow torchvision nltk natsort\n```\n"
            "Run `pip3 install fire` first.\n")
    drafted = Imported(requirements=[Found("torchvision", "dataset.py:14")], skipped=[
        Skipped("lmdb", "dataset.py:6", UNKNOWN), Skipped("natsort", "dataset.py:9", UNKNOWN),
        Skipped("warpctc_pytorch", "train.py:94", UNKNOWN)])
    kept = of_imported(read_readme("README.md", text), drafted, installed_packs())
    assert [(f.requirement, f.origin) for f in kept.requirements] == [
        ("lmdb", "README.md:3"), ("torchvision", "README.md:3"), ("natsort", "README.md:3")]


def test_beside_files_the_readme_states_only_the_framework_they_leave_out(
        tmp_path: Path) -> None:
    """keithito/tacotron d26c763 (2020-02-02): its requirements.txt leaves TensorFlow to the
    user, its README.md:40 says "This code works with TensorFlow 1.3 and later"; the
    README's other statements and its Python stay out where the files speak."""
    from envforge.app.drafting import draft_spec

    (tmp_path / "requirements.txt").write_text(
        "# It is assumed you have already installed tensorflow.\nnumpy==1.14.3\n")
    (tmp_path / "README.md").write_text(
        "## Installing dependencies\n\n1. Install Python 3.\n2. Install the latest version of "
        "TensorFlow. This code works with TensorFlow 1.3 and later.\n3. Install numpy 1.16.0 "
        "and Python 3.6\n", encoding="utf-8")
    (tmp_path / "train.py").write_text("import tensorflow as tf\nimport numpy as np\n")
    draft = draft_spec(tmp_path, source="t", name="t", platform="linux-64", lookup=None,
                       commit_day=None)
    found = {f.requirement: f.origin for f in draft.repository.imported.requirements}
    assert found == {"numpy==1.14.3": "requirements.txt:2",
                     "tensorflow<2,>=1.3": "README.md:4"}
    assert draft.repository.imported.python == [("==3.6", "README.md:5")]  # none in files


def test_a_label_line_opens_a_section_but_never_closes_one() -> None:
    text = ("## Requirements\nYou will need:\n- Python 3.6\n- PyTorch 1.0.1\n\n"
            "## Citation\nSee:\n- Smith 2019\n")
    stated = read_readme("README.md", text)
    assert [f.requirement for f in stated.requirements] == ["PyTorch==1.0.1"]
    assert stated.python == [("==3.6", "README.md:3")]


def test_runnable_with_states_a_floor() -> None:
    """locuslab/TCN ec2ee10 (2019-03-08) README.md:21."""
    text = ("**Update**: The code should be directly runnable with PyTorch 0.4.0 or above "
            "(PyTorch 1.0 strongly recommended). The older versions of PyTorch are no longer "
            "supported.\n")
    assert _stated(text)[0] == ("PyTorch>=0.4.0", "README.md:1")


SPADE_README = """Clone this repo.
```bash
git clone https://github.com/NVlabs/SPADE.git
cd SPADE/
```

This code also requires the Synchronized-BatchNorm-PyTorch rep.
```
cd models/networks/
git clone https://github.com/vacancy/Synchronized-BatchNorm-PyTorch
cp -rf Synchronized-BatchNorm-PyTorch/sync_batchnorm .
cd ../../
```
"""


def test_a_clone_is_tied_to_the_module_its_block_names() -> None:
    """NVlabs/SPADE's README.md: the first clone is the repository itself (its block names no
    sync_batchnorm); the second's ``cp`` line names it. A module nothing names has none."""
    assert clone_for(SPADE_README, "models.networks.sync_batchnorm") == (
        10, "https://github.com/vacancy/Synchronized-BatchNorm-PyTorch")
    assert clone_for(SPADE_README, "models.networks.replicate") is None
    assert clone_for("git clone --depth 1 https://x.org/a.git\ncp -r a/apex .\n", "apex") == (
        1, "https://x.org/a.git")

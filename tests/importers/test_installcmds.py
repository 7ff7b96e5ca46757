"""Install scripts' ``pip install`` and ``conda install``/``create`` commands read as
requirements, never run (``installcmds``)."""

from __future__ import annotations

from pathlib import Path

from envforge.importers import Imported
from envforge.importers.installcmds import read_install_commands, read_shell_script
from envforge.importers.repository import read_repository
from tests.testing.packs import REGISTRY

# Bobyuan1015/KDA's requirement.sh (2020-05), EkdeepSLubana/flowandprune's requirements.sh
# (2020) and pytorch.org's conda line of PyTorch 1.0, in one script
SCRIPT = """#!/usr/bin/env bash
conda create -n env python=3.6 -y && source activate env
conda install pytorch==1.0.0 torchvision==0.2.1 cuda100 -c pytorch
pip install -i https://pypi.tuna.tsinghua.edu.cn/simple tensorflow-gpu==1.14.0 --user
pip install future==0.18.2 numpy==1.18.4 \\
    Pillow==7.1.2  # the era's Pillow
pip install torch==1.5.0+cu101 -f https://download.pytorch.org/whl/torch_stable.html
conda env create -f environment.yml
python train.py --lr 0.1
"""


def test_an_install_scripts_commands_give_requirements_python_and_sources() -> None:
    found = read_shell_script("install.sh", SCRIPT)
    assert [(f.requirement, f.origin) for f in found.requirements] == [
        ("torch==1.0.0", "install.sh:3"), ("torchvision==0.2.1", "install.sh:3"),
        ("tensorflow-gpu==1.14.0", "install.sh:4"), ("future==0.18.2", "install.sh:5"),
        ("numpy==1.18.4", "install.sh:5"), ("Pillow==7.1.2", "install.sh:5"),
        ("torch==1.5.0+cu101", "install.sh:7")]
    assert found.requirements[0].note == "conda's pytorch is torch on PyPI"
    assert found.python == [("==3.6", "install.sh:2")]
    assert found.find_links == [("https://download.pytorch.org/whl/torch_stable.html",
                                 "install.sh:7")]
    assert found.index == []  # TUNA's mirror of PyPI: PyPI itself
    assert [(s.what, s.reason.split(":")[0]) for s in found.skipped] == [
        ("cuda100", "the pytorch channel's choice of a CUDA build, not a distribution"),
        ("-i https://pypi.tuna.tsinghua.edu.cn/simple",
         "an index that serves PyPI's releases (TUNA, Tsinghua University; "
         "knowledge/legacy_names.toml)")]


def test_conda_options_and_other_commands_name_nothing() -> None:
    """A channel, an environment's name or prefix is no package; ``conda activate``,
    ``conda env create -f`` (its file is read as such) and ``mamba remove`` install none."""
    out = Imported()
    read_install_commands("mamba install --yes -c conda-forge --name=x -p /opt/env "
                          "'scipy>=1.1' && conda activate x && conda env create -f e.yml && "
                          "mamba remove six && /opt/conda/bin/conda install $PKGS", "s.sh:1", out)
    assert [f.requirement for f in out.requirements] == ["scipy>=1.1"]
    assert [s.what for s in out.skipped] == ["$PKGS"]


def test_a_root_script_that_installs_is_read_after_the_requirements(tmp_path: Path) -> None:
    """The requirements file's exact pin wins over a script's; a script that installs
    nothing (``train.sh``) is no dependency file, nor is a script in a folder."""
    (tmp_path / "requirements.txt").write_text("numpy==1.16.4\n")
    (tmp_path / "install.sh").write_text("pip install numpy==1.18.4 keras==2.2.4\n")
    (tmp_path / "train.sh").write_text("python train.py --install-dir out\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "setup.sh").write_text("pip install six==1.0.0\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert repo.files == ("requirements.txt", "install.sh")
    assert [(f.requirement, f.origin) for f in repo.imported.requirements] == [
        ("numpy==1.16.4", "requirements.txt:1, also install.sh:1"),
        ("keras==2.2.4", "install.sh:1")]


def test_a_mirror_on_every_line_is_said_once(tmp_path: Path) -> None:
    """Bobyuan1015/KDA's requirement.sh names TUNA's mirror on each of its six lines; what
    is skipped keeps the order it was first met in."""
    lines = [f"pip install -i https://pypi.tuna.tsinghua.edu.cn/simple {name} --user\n"
             for name in ("tensorflow-gpu==1.14.0", "scipy")]
    lines.insert(1, "pip install -e .\n")
    lines.append("pip install -i https://pypi.tuna.tsinghua.edu.cn/simple jieba -e .\n")
    (tmp_path / "requirement.sh").write_text("".join(lines))
    skipped = read_repository(tmp_path, REGISTRY).imported.skipped
    assert [(s.what, s.origin) for s in skipped] == [
        ("-i https://pypi.tuna.tsinghua.edu.cn/simple", "requirement.sh:1 and 2 more"),
        ("-e .", "requirement.sh:2 and 1 more")]


def test_a_script_with_no_install_leaves_the_imports_to_draft_from(tmp_path: Path) -> None:
    """A script that installs nothing the spec carries (a comment, ``pip install -r`` of a
    file elsewhere, ``-e .``, ``conda env create -f``) is no dependency file: with it taken
    for one, init would not draft from the code's imports."""
    (tmp_path / "run.sh").write_text("#!/bin/sh\n# pip install nothing here\npython a.py\n")
    (tmp_path / "setup.sh").write_text("pip install -r requirements/base.txt\n"
                                       "pip install -e .\nconda env create -f env.yml\n")
    assert read_repository(tmp_path, REGISTRY).files == ()


def test_a_scripts_own_variables_are_expanded() -> None:
    """magenta-style install scripts: ``TF_VERSION=1.11.0``, then both branches of an
    ``if`` install it; a variable the script does not set stays unknown; a line opening
    with a ``[ test ]`` is a shell's, not a Dockerfile's exec form."""
    script = ("TF_VERSION=1.11.0\nexport KERAS='2.2.4'\nif command_exists nvcc; then\n"
              "  pip install tensorflow-gpu==${TF_VERSION} keras==$KERAS\nelse\n"
              "  pip install tensorflow==${TF_VERSION}\nfi\n"
              "pip install numpy==${NUMPY:-1.15.4} scipy==$SCIPY\n"
              "[ -n \"$GPU\" ] && pip install h5py==2.8.0\n"
              "STAMP=$(date)\npip install six==$STAMP\n")
    found = read_shell_script("setup.sh", script)
    assert [(f.requirement, f.origin) for f in found.requirements] == [
        ("tensorflow-gpu==1.11.0", "setup.sh:4"), ("keras==2.2.4", "setup.sh:4"),
        ("tensorflow==1.11.0", "setup.sh:6"), ("numpy==1.15.4", "setup.sh:8"),
        ("h5py==2.8.0", "setup.sh:9")]
    assert [s.what for s in found.skipped] == ["scipy==$SCIPY", "six==$STAMP"]


def test_a_package_named_twice_on_one_line_is_from_that_line_once(tmp_path: Path) -> None:
    """allenai/citeomatic's env.sh names scikit-learn twice in one ``conda create``."""
    (tmp_path / "requirements.txt").write_text("scikit-learn\n")
    (tmp_path / "env.sh").write_text("conda create -n x -y numpy scikit-learn scikit-learn\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert [(f.requirement, f.origin) for f in repo.imported.requirements] == [
        ("scikit-learn", "requirements.txt:1, also env.sh:1"), ("numpy", "env.sh:1")]


def test_conda_and_its_distribution_are_no_dependency() -> None:
    """``conda create -n env python=3.6 anaconda``: PyPI's anaconda is a placeholder ("Please
    use the Anaconda installer."), PyPI's conda stops at 4.3.16."""
    out = Imported()
    read_install_commands("conda create -n env python=3.6 anaconda conda-build nb_conda "
                          "keras=2.1", "install.sh:2", out)
    assert [f.requirement for f in out.requirements] == ["keras==2.1.*"]
    assert out.python == [("==3.6", "install.sh:2")]
    assert [s.what for s in out.skipped] == ["anaconda", "conda-build", "nb_conda"]
    assert "not a dependency of the code" in out.skipped[0].reason

"""A Dockerfile's ``RUN pip install`` commands read as requirements, never built or run."""

from __future__ import annotations

from pathlib import Path

from envforge.importers.dockerfile import read_dockerfile
from envforge.importers.repository import read_repository
from tests.testing.packs import REGISTRY

IMAGE = """FROM nvidia/cuda:9.0-cudnn7-runtime-ubuntu16.04
# the era's usual image: pip upgraded, then the stack
RUN apt-get update && apt-get install -y python3-pip git \\
    # a comment inside the instruction
    && pip3 install --upgrade pip setuptools wheel \\
    && pip3 install --no-cache-dir tensorflow-gpu==1.12 "keras==2.2.4" \\
         -f https://example.org/wheels.html
RUN python3 -m pip install -r requirements.txt && pip install -e . && pip install $EXTRA
RUN ["pip", "install", "pandas==0.24.2"]
RUN sudo -H pip install numpy==1.16.4 | tee /tmp/log
RUN conda install -y pytorch && pip download six==1.0 && pip install ./vendored.whl
"""


def test_each_pip_install_gives_its_requirements_from_its_instructions_line() -> None:
    found = read_dockerfile("Dockerfile", IMAGE)
    assert [(f.requirement, f.origin) for f in found.requirements] == [
        ("tensorflow-gpu==1.12", "Dockerfile:3"), ("keras==2.2.4", "Dockerfile:3"),
        ("pandas==0.24.2", "Dockerfile:9"), ("numpy==1.16.4", "Dockerfile:10"),
        ("torch", "Dockerfile:11")]
    assert "conda" in found.requirements[-1].note  # conda's pytorch is PyPI's torch
    assert found.find_links == [("https://example.org/wheels.html", "Dockerfile:3")]
    assert [(s.what, s.reason.split(":")[0]) for s in found.skipped] == [
        ("pip", "the installer's own tools, upgraded before the install"),
        ("setuptools", "the installer's own tools, upgraded before the install"),
        ("wheel", "the installer's own tools, upgraded before the install"),
        ("-e .", "an editable install"), ("$EXTRA", "a variable's value"),
        ("./vendored.whl", "a path (the repository itself, or a file an image copies in)")]


def test_a_shells_comment_on_the_line_names_nothing() -> None:
    found = read_dockerfile("Dockerfile", "RUN pip install six==1.12.0  # the era's six\n"
                            "RUN pip install git+https://h.example/x.git#egg=x\n")
    assert [f.requirement for f in found.requirements] == [
        "six==1.12.0", "x @ git+https://h.example/x.git"]


def test_a_dockerfiles_exact_pin_stands_where_the_requirements_leave_a_range(
        tmp_path: Path) -> None:
    """A requirements file naming ``tensorflow`` unpinned beside an image that installs
    tensorflow-gpu==1.12 (one module, [[same_module]]): the exact pin is what ran; a pin
    both make is the requirements file's, read first."""
    (tmp_path / "requirements.txt").write_text("tensorflow\npandas==0.23.4\n")
    (tmp_path / "Dockerfile").write_text(IMAGE)
    (tmp_path / "Dockerfile.cpu").write_text("FROM python:3.6\nRUN pip install six==1.12.0\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert repo.files == ("requirements.txt", "Dockerfile", "Dockerfile.cpu")
    pinned = {f.requirement.split(";")[0]: f.origin for f in repo.imported.requirements}
    assert pinned["pandas==0.23.4"] == "requirements.txt:2, also Dockerfile:9"
    assert "six==1.12.0" in pinned and "keras==2.2.4" in pinned
    assert any(r.startswith("tensorflow") and "1.12" in r for r in pinned)


def test_a_base_image_that_holds_the_framework_gives_its_release() -> None:
    """schanzel/bwhpc-container-demo: ``FROM tensorflow/tensorflow:1.8.0-gpu-py3`` then
    ``pip install keras==2.1.6``: the image's TensorFlow is the one its Keras ran on
    (TensorFlow's docker.md: the tag is the release, ``-gpu`` its GPU build); another
    image, or a tag naming no release, gives nothing."""
    found = read_dockerfile("Dockerfile", (
        "FROM tensorflow/tensorflow:1.8.0-gpu-py3\n"
        "RUN pip --no-cache-dir install keras==2.1.6\n"
        "FROM --platform=linux/amd64 docker.io/tensorflow/tensorflow:1.14.0-py3 AS cpu\n"
        "FROM tensorflow/tensorflow:latest-gpu\nFROM python:3.6-slim\n"))
    assert [(f.requirement, f.origin) for f in found.requirements] == [
        ("tensorflow-gpu==1.8.0", "Dockerfile:1"), ("keras==2.1.6", "Dockerfile:2"),
        ("tensorflow==1.14.0", "Dockerfile:3")]
    assert found.requirements[0].note == ("the base image tensorflow/tensorflow:1.8.0-gpu-py3 "
                                          "holds it (knowledge/legacy_names.toml)")
    torch = read_dockerfile("Dockerfile", "FROM pytorch/pytorch:1.4-cuda10.1-cudnn7-runtime\n"
                            "FROM pytorch/pytorch:1.5.1-cuda10.1-cudnn7-devel\n"
                            "FROM pytorch/pytorch:latest\n")
    assert [f.requirement for f in torch.requirements] == ["torch==1.4.*", "torch==1.5.1"]


def test_a_renamed_pin_keeping_its_release_still_dates_the_project(tmp_path: Path) -> None:
    """The image's ``tensorflow-gpu==1.8.0`` becomes the CPU build of the same release;
    counted as init's choice, it neither dated the project nor chose its Python, so 3.7 was
    proposed and the pin moved to 1.13.1 (no cp37 wheel of 1.8.0). A rename to another
    release, or a range, stays init's."""
    (tmp_path / "Dockerfile").write_text("FROM tensorflow/tensorflow:1.8.0-gpu-py3\n"
                                         "RUN pip install keras==2.1.6 tensorflow-gpu\n")
    found = {f.requirement: f.mapped for f in read_repository(tmp_path, REGISTRY)
             .imported.requirements}
    assert found == {"tensorflow==1.8.0": False, "keras==2.1.6": False}
    from envforge.importers.repository import _another_release

    assert not _another_release("pytorch==1.0.1", "torch==1.0.1")
    assert _another_release("keras", "keras<2.4")
    assert _another_release("msgpack-python==0.5.6", "msgpack==1.0.0")


def test_a_dockerfile_in_the_docker_folder_is_read_too(tmp_path: Path) -> None:
    """Many repositories keep their image in ``docker/`` (``docker/Dockerfile.gpu``)."""
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile.gpu").write_text("RUN pip install six==1.12.0\n")
    (tmp_path / "docker" / "entrypoint.sh").write_text("pip install nothing==1\n")
    repo = read_repository(tmp_path, REGISTRY)
    assert repo.files == ("docker/Dockerfile.gpu",)
    assert [(f.requirement, f.origin) for f in repo.imported.requirements] == [
        ("six==1.12.0", "docker/Dockerfile.gpu:1")]


def test_an_images_mirror_of_pypi_is_reported_and_another_index_taken() -> None:
    """``pip install -i https://mirrors.aliyun.com/pypi/simple/ ...``: a mirror of PyPI near
    the image's builder (``[[pypi_mirror]]``), often unreachable elsewhere: the spec keeps
    PyPI; an index of another host is the spec's (left out later where it cannot be reached)."""
    found = read_dockerfile("Dockerfile", "RUN pip install -i https://mirrors.aliyun.com/pypi"
                            "/simple/ six==1.12.0 && pip install --index-url=https://m/s x "
                            "-f ./wheels --find-links=http://[::1/w.html\n")
    assert [f.requirement for f in found.requirements] == ["six==1.12.0", "x"]
    assert found.index == [("https://m/s", "Dockerfile:1")]
    assert found.find_links == []
    assert [(s.what, s.reason.split(";")[0].split(":")[0]) for s in found.skipped] == [
        ("-i https://mirrors.aliyun.com/pypi/simple/",
         "an index that serves PyPI's releases (Alibaba Cloud"),
        ("-f ./wheels", "a local folder"),
        ("--find-links http://[::1/w.html", "not an http(s) URL")]


def test_arg_defaults_and_env_values_are_expanded_where_used() -> None:
    """``ARG TENSORFLOW_VERSION=1.12.0`` then ``pip install tensorflow-gpu==${...}``: the
    default is what the image's build took unless told otherwise; an ``ARG`` with no default
    stays unknown."""
    found = read_dockerfile("Dockerfile", (
        "ARG BASE=tensorflow/tensorflow:1.12.0-gpu-py3\nFROM $BASE\n"
        "ARG KERAS_VERSION=2.2.4\nARG EXTRA\nENV PYTORCH 1.0.1\nENV A=1 B=${A}.5\n"
        "RUN pip install keras==${KERAS_VERSION} torch==$PYTORCH six==$B.0 x==$EXTRA\n"))
    assert [f.requirement for f in found.requirements] == [
        "tensorflow-gpu==1.12.0", "keras==2.2.4", "torch==1.0.1", "six==1.5.0"]
    assert [s.what for s in found.skipped] == ["x==$EXTRA"]


def test_a_wheel_url_and_a_quoted_requirement_built_from_args() -> None:
    """Two images of the era: TensorFlow's wheel URL assembled from ARGs, one of them empty
    (``ARG TENSORFLOW_APPEND=``), and ``pip install "${PACKAGE}==${VERSION}"``."""
    found = read_dockerfile("Dockerfile", (
        "ARG TENSORFLOW_VERSION=1.5.0\nARG TENSORFLOW_DEVICE=cpu\nARG TENSORFLOW_APPEND=\n"
        "RUN pip3 --no-cache-dir install https://storage.googleapis.com/tensorflow/linux/"
        "${TENSORFLOW_DEVICE}/tensorflow${TENSORFLOW_APPEND}-${TENSORFLOW_VERSION}-cp35-cp35m-"
        "linux_x86_64.whl\n"
        "ARG KERAS_PACKAGE=keras\nARG KERAS_VERSION=2.1.4\n"
        'RUN pip install "${KERAS_PACKAGE}==${KERAS_VERSION}"\n'))
    assert [f.requirement for f in found.requirements] == [
        "tensorflow @ https://storage.googleapis.com/tensorflow/linux/cpu/tensorflow-1.5.0-"
        "cp35-cp35m-linux_x86_64.whl", "keras==2.1.4"]

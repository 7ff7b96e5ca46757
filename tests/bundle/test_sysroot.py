"""The Debian packages a lock hands its sdist builds: which, the folder they are unpacked in,
the flags that reach it, the cache key that names them, and a real C extension that compiles
and links only with them (gcc, dpkg-deb, uv: the seam is the .deb download, given here)."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from envforge.bundle.buildcache import build_key
from envforge.bundle.sysroot import build_debs, build_environ, debs_digest, sysroot
from envforge.bundle.wheels import build_sdist_wheel
from envforge.errors import EnvforgeError
from envforge.host.debunpack import unpack_deb
from envforge.lockfile import LockedDeb, LockedPypiFile
from tests.host.test_debunpack import build_deb

pytestmark = pytest.mark.posix_only("builds .debs with dpkg-deb and a C extension with gcc")


DEPENDS = {"libanswer-dev": "libanswer1 (= 1.0), libc6-dev | libc-dev"}


def locked(deb: Path, name: str) -> LockedDeb:
    return LockedDeb(name=name, version="1.0", architecture="amd64", filename=deb.name,
                     url=f"https://deb.example/{deb.name}", size=deb.stat().st_size,
                     sha256=hashlib.sha256(deb.read_bytes()).hexdigest(),
                     depends=DEPENDS.get(name, ""))


def answer_debs(tmp_path: Path) -> dict[str, Path]:
    """A library as Debian ships one: the runtime package with ``libanswer.so.1``, the -dev
    package with the header and the ``libanswer.so`` link."""
    source = tmp_path / "answer.c"
    source.write_text("int envforge_answer(void) { return 42; }\n")
    library = tmp_path / "libanswer.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libanswer.so.1", "-o",
                    str(library), str(source)], check=True)
    lib = "usr/lib/x86_64-linux-gnu"
    return {
        "libanswer1": build_deb(tmp_path, "libanswer1", "1.0",
                                files={f"{lib}/libanswer.so.1": library.read_bytes()}),
        "libanswer-dev": build_deb(tmp_path, "libanswer-dev", "1.0",
                                   files={"usr/include/answer.h":
                                          b"int envforge_answer(void);\n"},
                                   symlinks={f"{lib}/libanswer.so": "libanswer.so.1"}),
    }


def test_a_lock_without_a_dev_package_hands_its_builds_nothing(tmp_path: Path) -> None:
    """Theano's OpenBLAS (runtime packages only) changes no build and no cache key: the
    entries built before stay theirs."""
    debs = answer_debs(tmp_path)
    runtime = (locked(debs["libanswer1"], "libanswer1"),)
    both = (*runtime, locked(debs["libanswer-dev"], "libanswer-dev"))
    assert build_debs(runtime) == () and debs_digest(runtime) is None
    # what the -dev package does not depend on (a toolkit beside it) is not handed
    beside = build_deb(tmp_path, "toolkit", "1.0", files={"usr/bin/nvcc": b"x"})
    assert build_debs((*both, locked(beside, "toolkit"))) == build_debs(both)
    assert build_key(None, "3.7.16", "linux-64", runtime) == build_key(None, "3.7.16",
                                                                       "linux-64")
    assert [d.name for d in build_debs(both)] == ["libanswer-dev", "libanswer1"]
    assert debs_digest(both) == debs_digest(tuple(reversed(both)))
    assert build_key(None, "3.7.16", "linux-64", both) != build_key(None, "3.7.16",
                                                                    "linux-64")


def test_the_packages_are_unpacked_for_the_build_and_reached_after_the_hosts_headers(
        tmp_path: Path) -> None:
    debs = answer_debs(tmp_path)
    lock = tuple(locked(path, name) for name, path in debs.items())
    fetched: list[str] = []

    def fetch(deb: LockedDeb) -> Path:
        fetched.append(deb.name)
        return debs[deb.name]

    root = sysroot(tmp_path / "build" / "sysroot", lock, fetch)
    assert root == tmp_path / "build" / "sysroot"
    assert (root / "usr/include/answer.h").is_file()
    assert (root / "usr/lib/x86_64-linux-gnu/libanswer.so").resolve().name == "libanswer.so.1"
    assert sorted(fetched) == ["libanswer-dev", "libanswer1"]
    env = build_environ({"CFLAGS": "-O2"}, root)
    assert env["CFLAGS"] == f"-O2 -idirafter {root}/usr/include/x86_64-linux-gnu " \
                            f"-idirafter {root}/usr/include"
    assert f"-L{root}/usr/lib/x86_64-linux-gnu " in env["LDFLAGS"]
    assert sysroot(tmp_path / "other", lock[:1], fetch) is None  # no -dev package
    assert not (tmp_path / "other").exists()


def answer_sdist(tmp_path: Path) -> Path:
    """An sdist whose extension includes answer.h and links -lanswer, as PyAudio's does
    portaudio.h and -lportaudio."""
    files = {
        "setup.py": b"from setuptools import Extension, setup\n"
                    b"setup(name='answerext', version='1.0', ext_modules=[Extension("
                    b"'answerext', ['answerext.c'], libraries=['answer'])])\n",
        "answerext.c": b"#include <Python.h>\n#include <answer.h>\n"
                       b"static PyObject *get(PyObject *s, PyObject *a) "
                       b"{ return PyLong_FromLong(envforge_answer()); }\n"
                       b"static PyMethodDef m[] = {{\"get\", get, METH_NOARGS, 0}, {0}};\n"
                       b"static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, \"answerext\", "
                       b"0, -1, m};\n"
                       b"PyMODINIT_FUNC PyInit_answerext(void) { return PyModule_Create(&d); }\n",
        "PKG-INFO": b"Metadata-Version: 1.1\nName: answerext\nVersion: 1.0\n",
    }
    archive = tmp_path / "answerext-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"answerext-1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


@pytest.mark.network
def test_an_extension_compiles_and_links_against_the_locks_dev_package_only(
        tmp_path: Path) -> None:
    """Without the -dev package the build stops at the missing header; handed the lock's
    packages it builds, and the wheel is cached under the key that names them."""
    debs = answer_debs(tmp_path)
    lock = tuple(locked(path, name) for name, path in debs.items())
    archive = answer_sdist(tmp_path)
    sdist = LockedPypiFile(name="answerext", version="1.0", kind="sdist",
                           filename=archive.name, url=f"https://x.invalid/{archive.name}",
                           sha256=hashlib.sha256(archive.read_bytes()).hexdigest())
    cache = tmp_path / "cache"
    with pytest.raises(EnvforgeError, match=r"answer\.h"):
        build_sdist_wheel(sdist, archive, target_python="3.11", platform="linux-64",
                          cache=cache, environ=dict(os.environ))
    built = build_sdist_wheel(sdist, archive, target_python="3.11", platform="linux-64",
                              cache=cache, environ=dict(os.environ), debs=lock,
                              fetch_deb=lambda deb: debs[deb.name])
    assert built.path.name.startswith("answerext-1.0-cp311-")
    assert built.path.parent.name == build_key(None, "3.11", "linux-64", lock)
    assert not list(cache.rglob("answer.h"))  # the build's folder, not kept
    site = tmp_path / "site"
    zipfile.ZipFile(built.path).extractall(site)
    runtime = tmp_path / "runtime"  # as apply unpacks the environment's packages
    unpack_deb(debs["libanswer1"], runtime)
    done = subprocess.run([sys.executable, "-c", "import answerext; print(answerext.get())"],
                          cwd=site, capture_output=True, text=True, check=True,
                          env={**os.environ,
                               "LD_LIBRARY_PATH": f"{runtime}/usr/lib/x86_64-linux-gnu"})
    assert done.stdout.strip() == "42"


def test_a_lock_without_dev_packages_keys_its_builds_without_debians_resolver() -> None:
    """Every apply of a lock with an sdist asks for its build's key: where no ``-dev``
    package is locked (theano-cpu's OpenBLAS runtime alone), the answer is none without
    importing Debian's relation parser and index models (5 ms of a warm apply)."""
    from tests.testing.imports import imported_after

    code = ("from envforge.bundle.sysroot import debs_digest\n"
            "from envforge.lockfile import LockedDeb\n"
            "deb = LockedDeb(name='libopenblas0-pthread', version='0.3.21', "
            "architecture='amd64', filename='x.deb', url='https://deb.example/x.deb', "
            "size=1, sha256='0' * 64, depends='libc6 (>= 2.34), libgfortran5 (>= 8)')\n"
            "assert debs_digest([deb]) is None\n")
    assert imported_after(code, ["envforge.resolve"]) == []

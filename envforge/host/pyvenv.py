"""A venv written directly, as uv writes one, instead of spawning ``python -m venv``.

Starting the target Python only to lay out a folder, four links and a three-line
``pyvenv.cfg`` was a tenth of a warm apply, and more on a loaded host. What is written is
what that Python's own ``venv --without-pip`` writes on POSIX: ``bin/<its name>`` linked to
the interpreter as it was asked for, ``python`` and ``python3`` linked to that, ``include/``
(3.11 on: ``include/pythonX.Y``),
``lib/pythonX.Y/site-packages``, ``lib64 -> lib``, the activation scripts from its own
``venv/scripts`` with venv's placeholders filled, and ``pyvenv.cfg`` last, so a folder cut
short has none and is made again. Where this cannot be done the same way (Windows, whose
venv copies a launcher; an interpreter without its ``venv`` templates), ``make_venv`` says
so and the caller runs ``python -m venv``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from envforge.platforms import Os, host_platform

_LAST_CHECKED = (3, 12)  # 3.13's venv words its prompt and files differently
_PLACEHOLDERS = ("__VENV_DIR__", "__VENV_NAME__", "__VENV_PROMPT__", "__VENV_BIN_NAME__",
                 "__VENV_PYTHON__")


def venv_templates(executable: Path, minor: str) -> Path | None:
    """The interpreter's ``venv/scripts`` folder (its stdlib beside its bin/), if it has one."""
    scripts = executable.resolve().parent.parent / "lib" / f"python{minor}" / "venv" / "scripts"
    return scripts if (scripts / "common").is_dir() else None


def make_venv(executable: Path, version: str, prefix: Path) -> bool:
    """Write a venv at ``prefix`` (an empty or missing folder) for the interpreter at
    ``executable`` of full ``version``; False, with nothing written, where this host or
    interpreter needs ``python -m venv`` itself."""
    major, minor_number = (int(part) for part in version.split(".")[:2])
    minor = f"{major}.{minor_number}"
    templates = venv_templates(executable, minor)
    if host_platform().os is Os.WINDOWS or templates is None \
            or not (3, 3) <= (major, minor_number) <= _LAST_CHECKED:
        return False
    prefix, executable = prefix.absolute(), executable.absolute()
    bin_dir = prefix / "bin"
    include = prefix / "include"
    if (major, minor_number) >= (3, 11):
        include /= f"python{minor}"
    for folder in (bin_dir, include, prefix / "lib" / f"python{minor}" / "site-packages"):
        folder.mkdir(parents=True, exist_ok=True)
    if sys.maxsize > 2**32 and not (prefix / "lib64").exists():
        (prefix / "lib64").symlink_to("lib")
    env_exe = bin_dir / executable.name
    _relink(env_exe, str(executable))
    for name in ("python", "python3"):
        if name != executable.name:
            _relink(bin_dir / name, executable.name)
    _install_scripts(templates, {
        "__VENV_DIR__": str(prefix), "__VENV_NAME__": prefix.name,
        "__VENV_PROMPT__": f"({prefix.name}) ", "__VENV_BIN_NAME__": "bin",
        "__VENV_PYTHON__": str(env_exe)}, bin_dir)
    cfg = (f"home = {executable.parent}\ninclude-system-site-packages = false\n"
           f"version = {version}\n")
    scratch = prefix / ".pyvenv.cfg.tmp"
    scratch.write_text(cfg, encoding="utf-8")
    scratch.replace(prefix / "pyvenv.cfg")
    return True


def _relink(link: Path, target: str) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _install_scripts(templates: Path, values: dict[str, str], bin_dir: Path) -> None:
    """venv's ``install_scripts`` on POSIX: ``common`` and ``posix`` templates into bin/,
    placeholders replaced, modes kept."""
    for kind in ("common", "posix"):
        folder = templates / kind
        if not folder.is_dir():
            continue
        for source in sorted(folder.rglob("*")):
            if not source.is_file():
                continue
            target = bin_dir / source.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = source.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # venv skips a template it cannot read as text, with a warning
            for placeholder in _PLACEHOLDERS:
                text = text.replace(placeholder, values[placeholder])
            target.write_bytes(text.encode("utf-8"))
            shutil.copymode(source, target)

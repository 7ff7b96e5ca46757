"""A fleet of real hosts on this machine: podman containers of a debootstrapped Debian.

No image registry is reachable here, so the base image is a Debian rootfs made with
debootstrap from Debian's archive and imported with ``podman import``; Ansible reaches the
containers through the containers.podman connection plugin, taken from the ``ansible``
package on PyPI (ansible-galaxy's server is not reachable either). Podman runs here with
runc and no default ulimits (shared/CONTAINERS.md): ``containers.conf`` says both, and
every podman call, Ansible's included, reads it through ``CONTAINERS_CONF``.

``python -m tests.testing.fleet prepare`` makes all of it once; what it made is cached
under ``~/.cache/envforge-fleet`` and ``.fleet/`` and reused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("ENVFORGE_FLEET_CACHE", Path.home() / ".cache" / "envforge-fleet"))
COLLECTIONS = REPO / ".fleet" / "collections"
IMAGE = "localhost/envforge-fleet-base:bookworm"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# What a fleet host has: a Python for envforge itself (>= 3.11) and Ansible's modules, a g++
# for Theano. Nothing else; the environment's own Python comes from the bundle.
ROOTFS_PACKAGES = ("python3", "python3-venv", "python3-pip", "g++", "ca-certificates")
# containers.podman and ansible.posix (the json callback), as shipped in this ansible release.
ANSIBLE_WHEEL = "ansible==12.3.0"
WANTED_COLLECTIONS = ("ansible_collections/containers/podman/",
                      "ansible_collections/ansible/posix/")
CONTAINERS_CONF = """[containers]
default_ulimits = []

[engine]
runtime = "runc"
"""


def environ() -> dict[str, str]:
    """The environment podman and Ansible run with."""
    conf = CACHE / "containers.conf"
    return {**os.environ, "CONTAINERS_CONF": str(conf), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "ANSIBLE_COLLECTIONS_PATH": f"{COLLECTIONS}:{REPO}",
            "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(CACHE / "ansible-tmp"),
            "ANSIBLE_DEPRECATION_WARNINGS": "False"}


def podman(*args: str, check: bool = True, input_bytes: bytes | None = None) -> str:
    done = subprocess.run(["podman", *args], env=environ(), input=input_bytes,
                          capture_output=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)}: exit {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode(errors="replace")


def prepare() -> None:
    """The base image and the collections, made once (each step skipped when present)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / "containers.conf").write_text(CONTAINERS_CONF, encoding="utf-8")
    _collections()
    if _image_present():
        return
    rootfs_tar = CACHE / f"{SUITE}-rootfs.tar"
    if not rootfs_tar.is_file():
        _debootstrap(rootfs_tar)
    with rootfs_tar.open("rb") as stream:
        podman("import", "-", IMAGE, input_bytes=stream.read())


def _image_present() -> bool:
    return subprocess.run(["podman", "image", "exists", IMAGE], env=environ(),
                          check=False).returncode == 0


def _debootstrap(target: Path) -> None:
    root = CACHE / f"{SUITE}-rootfs"
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(ROOTFS_PACKAGES),
                    SUITE, str(root), MIRROR], check=True, stdout=subprocess.DEVNULL)
    for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for path in (root / leftover).glob("*"):
            if path.is_file():
                path.unlink()
    partial = target.with_suffix(".part")
    subprocess.run(["tar", "-C", str(root), "-cf", str(partial), "."], check=True)
    partial.rename(target)
    shutil.rmtree(root)


def _collections() -> None:
    if all((COLLECTIONS / prefix).is_dir() for prefix in WANTED_COLLECTIONS):
        return
    wheels = CACHE / "wheels"
    wheels.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d",
                    str(wheels), ANSIBLE_WHEEL], check=True)
    wheel = next(wheels.glob("ansible-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        members = [n for n in archive.namelist() if n.startswith(WANTED_COLLECTIONS)]
        archive.extractall(COLLECTIONS, members=members)


def start_hosts(names: Sequence[str]) -> None:
    """Fresh containers with no network: a fleet host gets everything from the bundle."""
    stop_hosts(names)
    for name in names:
        podman("run", "-d", "--name", name, "--hostname", name, "--network", "none", IMAGE,
               "sleep", "infinity")


def stop_hosts(names: Sequence[str]) -> None:
    for name in names:
        podman("rm", "-f", "-t", "0", name, check=False)


def host_exec(name: str, script: str) -> str:
    return podman("exec", name, "sh", "-c", script)


@dataclass(frozen=True)
class HostResult:
    """One host's line of the play recap."""

    ok: int
    changed: int
    failures: int
    unreachable: int

    @property
    def state(self) -> str:
        if self.failures or self.unreachable:
            return "failed"
        return "changed" if self.changed else "ok"


@dataclass(frozen=True)
class PlayResult:
    returncode: int
    hosts: dict[str, HostResult]
    document: Mapping[str, object]
    stderr: str

    def failures(self) -> str:
        """Every failed task as 'host: task: message', for assertion messages."""
        lines = []
        for play in self.document.get("plays", []):  # type: ignore[attr-defined]
            for task in play.get("tasks", []):
                for host, result in task.get("hosts", {}).items():
                    if result.get("failed"):
                        lines.append(f"{host}: {task.get('task', {}).get('name')}: "
                                     f"{str(result.get('msg', ''))[:600]} "
                                     f"{str(result.get('stderr', ''))[-600:]}")
        return "\n".join(lines) or self.stderr[-3000:]

    def task_results(self, task_name: str) -> dict[str, Mapping[str, object]]:
        """Each host's result of the task with this name."""
        out: dict[str, Mapping[str, object]] = {}
        for play in self.document.get("plays", []):  # type: ignore[attr-defined]
            for task in play.get("tasks", []):
                if task.get("task", {}).get("name") == task_name:
                    out.update(task.get("hosts", {}))
        return out


def playbook(playbook_path: Path, inventory: Path, *, extra: Mapping[str, str] | None = None,
             check: bool = False, diff: bool = False) -> PlayResult:
    """Runs ansible-playbook with the json callback; the recap per host, parsed."""
    command = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory),
               str(playbook_path)]
    for key, value in (extra or {}).items():
        command += ["-e", f"{key}={value}"]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    done = subprocess.run(command, env=environ(), capture_output=True, text=True, check=False)
    try:
        document = json.loads(_json_part(done.stdout))
    except ValueError as exc:
        raise RuntimeError(f"ansible-playbook printed no JSON (exit {done.returncode}):\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}") from exc
    hosts = {name: HostResult(ok=int(s.get("ok", 0)), changed=int(s.get("changed", 0)),
                              failures=int(s.get("failures", 0)),
                              unreachable=int(s.get("unreachable", 0)))
             for name, s in document.get("stats", {}).items()}
    return PlayResult(done.returncode, hosts, document, done.stderr)


def _json_part(stdout: str) -> str:
    """The callback's document; warnings Ansible prints before it are dropped."""
    match = re.search(r"^\{", stdout, re.MULTILINE)
    return stdout[match.start():] if match else stdout


def inventory(path: Path, names: Sequence[str],
              host_vars: Mapping[str, Mapping[str, str]] | None = None) -> Path:
    lines = ["[fleet]"]
    for name in names:
        extra = " ".join(f"{k}={v}" for k, v in (host_vars or {}).get(name, {}).items())
        lines.append(f"{name} ansible_connection=containers.podman.podman "
                     f"ansible_python_interpreter=/usr/bin/python3 {extra}".rstrip())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    if sys.argv[1:] != ["prepare"]:
        sys.exit("usage: python -m tests.testing.fleet prepare")
    prepare()

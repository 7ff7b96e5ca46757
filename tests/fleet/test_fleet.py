"""A fleet of three real hosts (podman containers of a debootstrapped Debian, no network)
converged by Ansible with the envforge collection, from one offline bundle.

The phases follow what an operator does: the first run changes every host, the second
changes none, check mode finds the one host that drifted, verify's rows come back as facts,
``state: absent`` restores every host, and a host given a tampered bundle fails alone.
Each phase prints its per-host recap. Run by ``make test-fleet`` (a lane of .ci/run), after
``python -m tests.testing.fleet prepare``.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testing import fleet

pytestmark = [pytest.mark.fleet, pytest.mark.slow]

HOSTS = ("efh1", "efh2", "efh3")
SPEC = "theano-cpu-debian"
REPO = fleet.REPO
PLAYBOOK = REPO / "ansible_collections" / "envforge" / "core" / "playbooks" / "offline_fleet.yml"
HOME = "/opt/envforge/home"
PREFIX = f"{HOME}/data/envs/{SPEC}"
# What envforge may change outside its own folder on a host: nothing, with theanorc = "env".
SNAPSHOT = ("find /root /etc /usr/local -xdev -type f -print0 | sort -z "
            "| xargs -0 sha256sum")


@pytest.fixture(scope="module")
def hosts() -> Iterator[tuple[str, ...]]:
    fleet.prepare()
    fleet.start_hosts(HOSTS)
    try:
        yield HOSTS
    finally:
        fleet.stop_hosts(HOSTS)


def _show(phase: str, result: fleet.PlayResult, capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(f"\nfleet: {phase}")
        for name, host in sorted(result.hosts.items()):
            print(f"  {name}: {host.state:8} ok={host.ok} changed={host.changed} "
                  f"failed={host.failures}")


def test_fleet_converges_stays_converged_and_rolls_back(
        hosts: tuple[str, ...], bundle: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    inventory = fleet.inventory(tmp_path / "inventory.ini", hosts,
                                {name: {"envforge_bundle_src": str(bundle)} for name in hosts})
    extra = {"envforge_spec_name": f"{SPEC}.toml"}
    before = {name: fleet.host_exec(name, SNAPSHOT) for name in hosts}

    first = fleet.playbook(PLAYBOOK, inventory, extra=extra)
    _show("first run", first, capsys)
    assert first.returncode == 0, first.failures()
    packed = f"envforge-bundle-{hashlib.sha1(str(bundle).encode()).hexdigest()}-*.tar"
    assert not list(Path("/tmp").glob(packed)), "the controller kept a tar"  # the role's default
    assert {name: h.state for name, h in first.hosts.items()} == dict.fromkeys(hosts, "changed")
    converged = first.task_results("envforge.core.offline_apply : The environment, converged")
    assert all(result["changed"] for result in converged.values())

    verified = first.task_results("envforge.core.offline_apply : Verify it")
    for name in hosts:
        facts = verified[name]["ansible_facts"]["envforge_verify"]  # type: ignore[index]
        assert facts["verdict"] == "pass"
        names = {row["name"] for row in facts["rows"]}
        assert {"version.theano", "kernel.gemm.checksum"} <= names
        assert facts["counts"]["fail"] == 0 and facts["counts"]["pass"] >= 10

    second = fleet.playbook(PLAYBOOK, inventory, extra=extra)
    _show("second run (no-op)", second, capsys)
    assert second.returncode == 0, second.failures()
    assert {name: h.changed for name, h in second.hosts.items()} == dict.fromkeys(hosts, 0)

    # Drift on one host: its .theanorc edited by hand. Check mode names it, and only it.
    fleet.host_exec("efh2", f"echo 'floatX = float32' >> {PREFIX}/etc/theanorc")
    check = fleet.playbook(PLAYBOOK, inventory, extra=extra, check=True, diff=True)
    _show("check mode, efh2 drifted", check, capsys)
    assert check.returncode == 0, check.failures()
    assert {name: h.changed for name, h in check.hosts.items()} == {
        "efh1": 0, "efh2": 1, "efh3": 0}
    drifted = check.task_results("envforge.core.offline_apply : The environment, converged")
    diff = drifted["efh2"]["diff"]
    assert "theanorc" in diff["prepared"] and "floatX = float32" in diff["prepared"]  # type: ignore[index]
    assert fleet.host_exec("efh2", f"tail -1 {PREFIX}/etc/theanorc").strip() == \
        "floatX = float32", "check mode changed the host"

    absent = fleet.playbook(PLAYBOOK, inventory, extra={**extra, "envforge_state": "absent"})
    _show("state: absent", absent, capsys)
    assert absent.returncode == 0, absent.failures()
    assert {name: h.state for name, h in absent.hosts.items()} == dict.fromkeys(hosts, "changed")
    for name in hosts:
        assert fleet.host_exec(name, f"test -e {PREFIX} && echo left || echo gone").strip() \
            == "gone"
        assert fleet.host_exec(name, SNAPSHOT) == before[name]


def test_a_tampered_bundle_fails_its_host_only(
        hosts: tuple[str, ...], bundle: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    fleet.start_hosts(hosts)  # fresh hosts: nothing applied yet, so the bundle is needed
    tampered = tmp_path / "tampered"
    shutil.copytree(bundle, tampered)
    wheel = next((tampered / "pypi").glob("*.whl"))
    data = bytearray(wheel.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte flipped inside a member: same size, other hash
    wheel.write_bytes(bytes(data))
    sources = {"efh1": bundle, "efh2": bundle, "efh3": tampered}  # extra vars would win
    inventory = fleet.inventory(tmp_path / "inventory.ini", hosts,
                                {name: {"envforge_bundle_src": str(sources[name])}
                                 for name in hosts})
    extra = {"envforge_spec_name": f"{SPEC}.toml", "envforge_verify": "false"}

    result = fleet.playbook(PLAYBOOK, inventory, extra=extra)
    _show("efh3 given a tampered bundle", result, capsys)
    assert {name: h.state for name, h in result.hosts.items()} == {
        "efh1": "changed", "efh2": "changed", "efh3": "failed"}
    failed = result.task_results("envforge.core.offline_apply : The environment, converged")
    assert "sha256" in str(failed["efh3"].get("msg", "")).lower()
    assert fleet.host_exec("efh3", f"test -e {PREFIX} && echo left || echo gone").strip() \
        == "gone"

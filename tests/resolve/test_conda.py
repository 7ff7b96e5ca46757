from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from pathlib import Path

import pytest

from envforge.errors import ResolveError
from envforge.lockfile import LockedCondaPackage
from envforge.resolve.conda import (
    VirtualPackage,
    channel_url,
    default_virtual_packages,
    python_spec,
    solve_conda,
)
from tests.testing.conda_channel import archive, copy_channel, sha256_of


def _versions(records: Sequence[LockedCondaPackage]) -> dict[str, str]:
    return {r.name: r.version for r in records}


def test_linux_solve_respects_constraints_and_records_everything(conda_channel: Path,
                                                                 tmp_path: Path) -> None:
    records = solve_conda(["theano-pymc"], [str(conda_channel)], "linux-64", python="3.7",
                          cache_dir=tmp_path)

    assert [r.name for r in records] == ["libgpuarray", "pygpu", "python", "theano-pymc"]
    # pygpu 0.8.0 and libgpuarray 0.8.0 exist, but theano-pymc needs pygpu <0.8,
    # which needs libgpuarray <0.8.
    assert _versions(records) == {"libgpuarray": "0.7.6", "pygpu": "0.7.6",
                                  "python": "3.7.16", "theano-pymc": "1.0.5"}
    channel = conda_channel.as_uri()
    for record in records:
        path = archive(conda_channel, record.subdir, record.name, record.version)
        assert record.channel == channel
        assert record.url == f"{channel}/{record.subdir}/{path.name}"
        assert record.filename == path.name
        assert record.sha256 == sha256_of(path)
        assert record.size == path.stat().st_size
        assert record.build.endswith("_0") and record.build_number == 0
    by_name = {r.name: r for r in records}
    assert {r.subdir for r in records} == {"linux-64", "noarch"}
    assert by_name["theano-pymc"].subdir == "noarch"
    assert by_name["pygpu"].depends == ("libgpuarray >=0.7.6,<0.8", "python >=3.7,<3.8")
    assert by_name["libgpuarray"].depends == ("__glibc >=2.12",)


def test_without_the_constraint_the_newer_pygpu_wins(conda_channel: Path, tmp_path: Path) -> None:
    records = solve_conda(["pygpu"], [str(conda_channel)], "linux-64", python=None,
                          cache_dir=tmp_path)
    assert _versions(records) == {"libgpuarray": "0.8.0", "pygpu": "0.8.0", "python": "3.8.18"}


def test_win64_from_any_host(conda_channel: Path, tmp_path: Path) -> None:
    records = solve_conda(["theano-pymc", "m2w64-toolchain"], [conda_channel.as_uri()], "win-64",
                          python="3.7.16", cache_dir=tmp_path)
    assert _versions(records) == {"libgpuarray": "0.7.6", "m2w64-toolchain": "5.3.0",
                                  "pygpu": "0.7.6", "python": "3.7.16", "theano-pymc": "1.0.5"}
    subdirs = {r.name: r.subdir for r in records}
    assert subdirs == {"libgpuarray": "win-64", "m2w64-toolchain": "noarch", "pygpu": "win-64",
                       "python": "win-64", "theano-pymc": "noarch"}
    # The win-64 libgpuarray has no __glibc dependency: it is the win-64 build.
    assert next(r for r in records if r.name == "libgpuarray").depends == ()


def test_windows_only_package_is_unsatisfiable_on_linux(conda_channel: Path,
                                                       tmp_path: Path) -> None:
    with pytest.raises(ResolveError) as caught:
        solve_conda(["m2w64-toolchain"], [str(conda_channel)], "linux-64", python=None,
                    cache_dir=tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"no conda solution for linux-64 from {conda_channel.as_uri()}: ")
    assert "m2w64-toolchain 5.3.0 would require __win" in message
    assert "virtual packages assumed for linux-64: __unix=0, __linux=5.10, __glibc=2.12" in message


@pytest.mark.parametrize(("cuda", "solvable"), [(None, False), ("9.2", False), ("10.1", True)])
def test_cuda_virtual_package_comes_from_the_spec(conda_channel: Path, tmp_path: Path,
                                                  cuda: str | None, solvable: bool) -> None:
    def solve() -> tuple[LockedCondaPackage, ...]:
        return solve_conda(["cudnn"], [str(conda_channel)], "linux-64", python=None, cuda=cuda,
                           cache_dir=tmp_path)

    if solvable:
        assert _versions(solve()) == {"cudnn": "7.6.5"}
        return
    with pytest.raises(ResolveError, match=r"cudnn 7\.6\.5 would require __cuda >=10\.0") as caught:
        solve()
    hinted = "set [cuda] version in the spec" in str(caught.value)
    assert hinted == (cuda is None)


def test_python_pin_that_the_stack_cannot_meet(conda_channel: Path, tmp_path: Path) -> None:
    with pytest.raises(ResolveError, match=r"pygpu 0\.7\.6 would require python >=3\.7,<3\.8"):
        solve_conda(["theano-pymc"], [str(conda_channel)], "linux-64", python="3.8",
                    cache_dir=tmp_path)


def test_missing_local_channel_is_named(conda_channel: Path, tmp_path: Path) -> None:
    missing = (tmp_path / "no-such-channel").as_uri()
    with pytest.raises(ResolveError) as caught:
        solve_conda(["pygpu"], [str(conda_channel), missing], "linux-64", python=None,
                    cache_dir=tmp_path / "cache")
    message = str(caught.value)
    assert message.startswith(f"conda channel {missing} is unreachable or not a channel ")
    assert "\n" not in message


def test_unreachable_http_channel_is_named(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/conda-forge"
    with pytest.raises(ResolveError, match=rf"^conda channel {url} is unreachable .*Connection"):
        solve_conda(["pygpu"], [url], "win-64", python=None, cache_dir=tmp_path)


def test_http_channel(conda_channel_http: str, tmp_path: Path) -> None:
    records = solve_conda(["theano-pymc"], [conda_channel_http + "/"], "linux-64", python="3.7",
                          cache_dir=tmp_path)
    assert _versions(records)["pygpu"] == "0.7.6"
    assert {r.channel for r in records} == {conda_channel_http}
    assert all(r.url.startswith(f"{conda_channel_http}/{r.subdir}/") for r in records)


def test_record_without_sha256_is_refused(conda_channel: Path, tmp_path: Path) -> None:
    channel = copy_channel(conda_channel, tmp_path / "channel")
    index = channel / "linux-64" / "repodata.json"
    repodata = json.loads(index.read_text())
    for name, entry in repodata["packages.conda"].items():
        if name.startswith("libgpuarray-0.7.6-"):
            del entry["sha256"]
    index.write_text(json.dumps(repodata))
    with pytest.raises(ResolveError, match=r"libgpuarray-0\.7\.6-\w+\.conda from .* no sha256"):
        solve_conda(["pygpu <0.8"], [str(channel)], "linux-64", python=None,
                    cache_dir=tmp_path / "cache")


def test_invalid_match_spec(conda_channel: Path, tmp_path: Path) -> None:
    with pytest.raises(ResolveError, match=r"invalid conda package spec 'pygpu >=,,'"):
        solve_conda(["pygpu >=,,"], [str(conda_channel)], "linux-64", python=None,
                    cache_dir=tmp_path)


def test_invalid_cuda_version(conda_channel: Path, tmp_path: Path) -> None:
    with pytest.raises(ResolveError, match=r"invalid virtual package __cuda=>=10\.0"):
        solve_conda(["cudnn"], [str(conda_channel)], "linux-64", python=None, cuda=">=10.0",
                    cache_dir=tmp_path)


def test_explicit_virtual_packages_replace_the_defaults(conda_channel: Path,
                                                        tmp_path: Path) -> None:
    records = solve_conda(["m2w64-toolchain"], [str(conda_channel)], "linux-64", python=None,
                          virtual_packages=[VirtualPackage("__win", "0")], cache_dir=tmp_path)
    assert _versions(records) == {"m2w64-toolchain": "5.3.0"}


def test_channel_urls(tmp_path: Path) -> None:
    assert channel_url("conda-forge") == "https://conda.anaconda.org/conda-forge"
    assert channel_url("https://repo.example.org/msys2/") == "https://repo.example.org/msys2"
    assert channel_url(str(tmp_path)) == tmp_path.as_uri()
    assert channel_url(tmp_path.as_uri()) == tmp_path.as_uri()


def test_python_spec() -> None:
    assert python_spec("3.7") == "python 3.7.*"
    assert python_spec("3.7.16") == "python ==3.7.16"


def test_default_virtual_packages() -> None:
    linux = {v.name: v for v in default_virtual_packages("linux-64")}
    assert set(linux) == {"__unix", "__linux", "__glibc", "__archspec"}
    assert linux["__glibc"].version == "2.12"  # CentOS 6: conda-forge 2020-21 (linux-anvil-comp7)
    assert (linux["__archspec"].version, linux["__archspec"].build) == ("1", "x86_64")
    win = {v.name: v for v in default_virtual_packages("win-64", cuda="10.1")}
    assert set(win) == {"__win", "__archspec", "__cuda"}
    assert str(win["__cuda"]) == "__cuda=10.1"


def test_the_previous_locks_packages_are_kept_where_the_specs_allow(conda_channel: Path,
                                                                    tmp_path: Path) -> None:
    """Alone, pygpu takes 0.8.0 (and libgpuarray 0.8.0, python 3.8): with the 0.7.6 stack
    locked before, the pin removed keeps it; a spec that excludes a preference wins."""
    channels = [str(conda_channel)]
    old = solve_conda(["pygpu ==0.7.6"], channels, "linux-64", python=None, cache_dir=tmp_path)
    assert _versions(old) == {"libgpuarray": "0.7.6", "pygpu": "0.7.6", "python": "3.7.16"}
    kept = solve_conda(["pygpu"], channels, "linux-64", python=None, cache_dir=tmp_path,
                       preferences=old)
    assert kept == old
    moved = solve_conda(["pygpu", "python >=3.8"], channels, "linux-64", python=None,
                        cache_dir=tmp_path, preferences=old)
    assert _versions(moved) == {"libgpuarray": "0.8.0", "pygpu": "0.8.0", "python": "3.8.18"}
    gone = [r.model_copy(update={"url": r.url + ".gone"}) for r in old]  # not in the channel
    assert _versions(solve_conda(["pygpu"], channels, "linux-64", python=None,
                                 cache_dir=tmp_path, preferences=gone))["pygpu"] == "0.8.0"

"""One confinement rule, checked per source of paths (issue 10 #2): lock file names, Debian
markers, conda records, bundle manifests and bundle look-ups, archive members, link targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envforge.bundle.manifest import MANIFEST, bundle_index
from envforge.bundle.sources import in_bundle
from envforge.confine import EscapeError, inside, link_target_inside, relative_parts
from envforge.errors import ArtifactError
from envforge.host.archives import safe_member_name
from envforge.host.fetch import FileRef, cache_path
from envforge.lockfile import LockedDeb
from envforge.steps.debs import marker_path

SHA = "a" * 64
ESCAPES = ["../x", "a/../../x", "/etc/passwd", "C:/Windows/x", "\\\\server\\share", "a\0b",
           "a\nb", "", ".", "x" * 256, "/".join(["d" * 200] * 21)]


@pytest.mark.parametrize("raw", ESCAPES)
def test_the_rule_refuses_every_escape(raw: str) -> None:
    with pytest.raises(EscapeError):
        relative_parts(raw)


def test_the_rule_keeps_plain_relative_paths() -> None:
    assert relative_parts("pool/main/./g/x.deb") == ("pool", "main", "g", "x.deb")
    with pytest.raises(EscapeError, match="may not hold folders"):
        relative_parts("a/b", single=True)


@pytest.mark.parametrize("raw", ["../../../../outside/x.deb", "/tmp/x.deb", "a/../../x"])
def test_download_targets_stay_in_the_cache(tmp_path: Path, raw: str) -> None:
    with pytest.raises(ArtifactError, match=r"locked file name .* refused"):
        cache_path(tmp_path, FileRef("https://x.invalid/x", SHA, raw))
    with pytest.raises(ArtifactError, match="not 64 hex digits"):
        cache_path(tmp_path, FileRef("https://x.invalid/x", "../" + SHA[3:], "x.deb"))
    assert cache_path(tmp_path, FileRef("u", SHA, "pool/x.deb")) == \
        tmp_path / "files" / "aa" / SHA / "pool" / "x.deb"


def test_bundle_lookups_stay_in_the_bundle(tmp_path: Path) -> None:
    (tmp_path / "outside.whl").write_bytes(b"x")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    with pytest.raises(ArtifactError, match="refused"):
        in_bundle(bundle, FileRef("u", SHA, "../outside.whl"))


def test_a_manifest_path_outside_the_bundle_is_refused(tmp_path: Path) -> None:
    from envforge.errors import InputError

    manifest = {"format": "envforge-bundle", "version": 1, "envforge": "0", "spec_name": "x",
                "spec_hash": "h", "spec": "s", "lock": "l", "lock_sha256": SHA,
                "platform": "linux-64", "python": "3.7",
                "files": [{"path": "/etc/hostname", "source": "deb", "role": "deb",
                           "name": "x", "sha256": SHA, "size": 1}]}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"files\.0\.path: .*absolute path"):
        bundle_index(tmp_path)


@pytest.mark.parametrize(("name", "version"), [("../../../../outside/x", "1"),
                                               ("libx", "1/../../../../y")])
def test_debian_markers_stay_in_the_env(tmp_path: Path, name: str, version: str) -> None:
    deb = LockedDeb.model_construct(name=name, version=version)  # as if the model let it by
    with pytest.raises(ArtifactError, match=r"Debian package marker .* refused"):
        marker_path(tmp_path, deb)


def test_archive_members_use_the_same_rule(tmp_path: Path) -> None:
    for raw in ESCAPES[:-2]:
        with pytest.raises(ArtifactError, match="refusing to unpack member"):
            safe_member_name(tmp_path / "a.tgz", raw)


def test_link_targets_are_judged_where_they_are_installed(tmp_path: Path) -> None:
    root = tmp_path / "cuda"
    link_target_inside(root, root / "lib64" / "libcudnn.so", "libcudnn.so.7", what="a")
    link_target_inside(root, root / "lib64" / "x", "../include/cudnn.h", what="a")
    for target in ("../../toplevel.so", "/lib/libc.so.6", "../../cuda2/x"):
        with pytest.raises(ArtifactError, match=r"outside|absolute"):
            link_target_inside(root, root / "lib64" / "x", target, what="a")
    assert inside(root, "lib64/x", what="a") == root / "lib64" / "x"

"""``envforge bundle LOCK -o DIR`` makes an offline bundle; ``--check DIR`` checks one."""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

from rich.text import Text

from envforge.app.packs import installed_packs
from envforge.bundle.build import BundleRequest, MiB, build_bundle
from envforge.bundle.check import check_bundle
from envforge.bundle.manifest import Manifest
from envforge.bundle.selfcheck import check_own_envforge
from envforge.commands import Common
from envforge.commands.apply import parse_artifacts
from envforge.errors import ExitCode, InputError
from envforge.host.outputs import check_output
from envforge.paths import envforge_dirs
from envforge.spec import PLATFORMS
from envforge.ui import UI


def run_bundle(args: argparse.Namespace, ui: UI) -> int:
    if args.check:
        return run_check(Path(args.target), ui)
    if args.output is None:
        raise InputError("envforge bundle LOCK -o DIR: say where the bundle goes")
    artifacts = parse_artifacts(args.artifact)
    check_output(Path(args.output), inputs=[Path(args.target), *artifacts.values()],
                 kind="folder", make_parents=True)
    request = BundleRequest(
        lock=Path(args.target), output=Path(args.output).absolute(), platform=args.platform,
        artifacts=artifacts, with_envforge=args.with_envforge,
        with_suite=args.with_suite,
        jobs=args.jobs, **({"envforge_python": args.envforge_python}
                           if args.envforge_python else {}))
    started = time.perf_counter()
    manifest = build_bundle(request, installed_packs(), cache=envforge_dirs().cache, ui=ui,
                            environ=dict(os.environ))
    elapsed = time.perf_counter() - started
    show_sizes(manifest, request.output, ui)
    if ui.json:
        ui.document("bundle", {"bundle": str(request.output), **summary(manifest),
                               "elapsed_s": round(elapsed, 3)})
    ui.success(f"bundle for {manifest.spec_name} ({manifest.platform}) written to "
               f"{request.output}: {len(manifest.files)} files, "
               f"{manifest.total_size / MiB:.1f} MiB in {elapsed:.1f}s")
    return 0


def summary(manifest: Manifest) -> dict[str, object]:
    """The --json view: sizes per source, every file, and what was left out."""
    return {
        "spec_name": manifest.spec_name, "spec_hash": manifest.spec_hash,
        "platform": manifest.platform,
        "sizes": {s: {"files": n, "bytes": b} for s, (n, b) in manifest.sizes().items()},
        "total_bytes": manifest.total_size,
        "files": [f.model_dump(mode="json", exclude_none=True) for f in manifest.files],
        "omitted": [o.model_dump(mode="json") for o in manifest.omitted],
    }


def show_sizes(manifest: Manifest, bundle: Path, ui: UI) -> None:
    rows: list[list[object]] = [[s, n, f"{b / MiB:.1f}"] for s, (n, b) in manifest.sizes().items()]
    rows.append([Text("total", style="bold"), len(manifest.files),
                 Text(f"{manifest.total_size / MiB:.1f}", style="bold")])
    ui.table(f"bundle {bundle} ({manifest.spec_name}, {manifest.platform})",
             ["source", "files", "MiB"], rows)
    for omitted in manifest.omitted:
        ui.info(f"left out {omitted.filename}: {omitted.reason}")


def run_check(bundle: Path, ui: UI) -> int:
    result = check_bundle(bundle, installed_packs())
    ran: str | None = "the bundle's files do not match its manifest"
    if result.ok:  # then its wheels and lock are the manifest's, and may be run
        problems, ran = check_own_envforge(bundle, result.manifest, installed_packs())
        result = replace(result, problems=tuple(problems))
        if ran is not None:
            ui.info(f"its own envforge was not run: {ran}")
    if ui.json:
        ui.document("bundle-check", {
            "bundle": str(bundle), "ok": result.ok, "problems": list(result.problems),
            "own_envforge": "not run: " + ran if ran else "ok" if result.ok else "failed",
            "files": [{"path": f.path, "source": f.source, "status": f.status,
                       "detail": f.detail} for f in result.files]})
    bad = [f for f in result.files if f.status != "ok"]
    if bad:
        ui.table(f"bundle {bundle}: files that do not match the manifest",
                 ["file", "source", "status", "detail"],
                 [[f.path, f.source, Text(f.status, style="red"), f.detail] for f in bad])
    if result.ok:
        ui.success(f"{bundle}: {len(result.files)} files match the manifest and cover "
                   f"{result.manifest.lock} for {result.manifest.platform}"
                   + ("" if ran else "; its own envforge reads the spec and lock"))
        return int(ExitCode.OK)
    for problem in result.problems:
        ui.error(problem)
    return int(ExitCode.FAILED)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    parser = sub.add_parser(
        "bundle", help="gather a lock's files into a folder a host with no network can apply",
        description="envforge bundle LOCK -o DIR makes a bundle; envforge bundle --check DIR "
                    "checks one (exit 0 when whole, 1 when a file is missing or altered).")
    parser.add_argument("target", metavar="LOCK|DIR", help="the lock to bundle (or, with "
                                                           "--check, the bundle)")
    parser.add_argument("-o", "--output", metavar="DIR", help="where the bundle goes")
    parser.add_argument("--platform", choices=PLATFORMS,
                        help="the target platform (default: this host's, or the lock's only one)")
    parser.add_argument("--artifact", action="append", default=[], metavar="ROLE=PATH",
                        help="a file you downloaded, e.g. cudnn=cudnn-10.2-...tgz")
    parser.add_argument("--with-suite", action="store_true",
                        help="also carry what `verify --suite` needs: pytest from the lock's "
                             "test group and the sdist the tests come from")
    parser.add_argument("--with-envforge", action="store_true",
                        help="carry envforge and its dependencies as wheels too")
    parser.add_argument("--envforge-python", metavar="X.Y",
                        help="the Python envforge will run on there (default: this one's)")
    parser.add_argument("--jobs", type=int, default=8, help="parallel downloads (default 8)")
    parser.add_argument("--check", action="store_true",
                        help="check the bundle DIR against its manifest and lock")
    common(parser)
    parser.set_defaults(handler=run_bundle)

"""``envforge image BUNDLE --base IMAGE``: an OCI image (and an Apptainer definition) from a bundle.

The build context is written first (Containerfile, the bundle, envforge.def); podman or
buildah then builds it with no network, so everything comes from the bundle. ``--no-build``
stops after the context, for a host that builds elsewhere.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from envforge.app.packs import installed_packs
from envforge.bundle.check import check_bundle
from envforge.commands import Common
from envforge.errors import ExitCode, InputError
from envforge.host import containers
from envforge.host.outputs import check_output
from envforge.image import (
    ImageRecipe,
    apptainer_definition,
    check_reference,
    containerfile,
    recipe_for,
)
from envforge.platforms import PLATFORMS, Os
from envforge.ui import UI

CONTAINERFILE = "Containerfile"
APPTAINER_DEF = "envforge.def"
MARKER = ".envforge-image-context"  # written first: the folder is envforge's to replace


def run_image(args: argparse.Namespace, ui: UI) -> int:
    bundle = Path(args.bundle)
    check_reference(args.base, "--base")
    if args.tag is not None:
        check_reference(args.tag, "-t")
    context = Path(args.output or f"{bundle}.image").absolute()
    check_context(context, bundle)
    checked = check_bundle(bundle, installed_packs())
    if not checked.ok:
        raise InputError(f"{bundle}: not a whole bundle: {'; '.join(checked.problems)}")
    manifest = checked.manifest
    if manifest.envforge_wheels is None:
        raise InputError(f"{bundle}: the image installs envforge from the bundle: make it with "
                         f"`envforge bundle LOCK -o DIR --with-envforge --envforge-python X.Y` "
                         f"(X.Y the base image's Python)")
    if PLATFORMS[manifest.platform].os is not Os.LINUX:  # OCI images here are Linux ones
        raise InputError(f"{bundle}: images are linux-64; this bundle is {manifest.platform}")
    recipe = recipe_for(manifest, base=args.base, tag=args.tag)
    write_context(context, bundle, recipe)
    archive = f"{manifest.spec_name}.oci.tar"
    (context / APPTAINER_DEF).write_text(apptainer_definition(recipe, archive), encoding="utf-8")
    result: dict[str, object] = {"context": str(context), "tag": recipe.tag,
                                 "labels": recipe.labels(), "built": False}
    if not args.no_build:
        engine = containers.engine()
        started = time.perf_counter()
        ui.info(f"building {recipe.tag} with {engine.name} (apply and verify run inside, "
                f"no network)")
        containers.build(engine, context, CONTAINERFILE, recipe.tag)
        result.update(built=True, engine=engine.name,
                      build_s=round(time.perf_counter() - started, 1))
        if args.oci_archive:
            containers.save_oci_archive(engine, recipe.tag, context / archive)
            result["oci_archive"] = str(context / archive)
    if ui.json:
        ui.document("image", result)
    what = f"image {recipe.tag} built" if result["built"] else "build context written"
    ui.success(f"{what}: {context} (Containerfile, {APPTAINER_DEF})")
    return int(ExitCode.OK)


def check_context(context: Path, bundle: Path) -> None:
    """Refuse a build context that would destroy or copy into itself what is not envforge's:
    a folder neither empty nor marked as a context envforge made, one inside the bundle (the
    copy would copy itself), one holding the bundle, or an output ``check_output`` refuses."""
    check_output(context, inputs=[bundle], kind="folder", make_parents=True)
    if context.is_dir() and any(context.iterdir()) and not (context / MARKER).is_file():
        raise InputError(f"-o {context}: not empty and not a build context envforge made (it "
                         f"has no {MARKER}); pick a new or empty folder")


def write_context(context: Path, bundle: Path, recipe: ImageRecipe) -> None:
    """The build context: its marker, the Containerfile and a copy of the bundle (hard links
    where possible). Only a folder envforge marked as its own context is replaced whole."""
    if (context / MARKER).is_file():
        shutil.rmtree(context)
    context.mkdir(parents=True, exist_ok=True)
    (context / MARKER).write_text("made by `envforge image`, which replaces this folder whole "
                                  "when it writes the context again\n", encoding="utf-8")
    shutil.copytree(bundle, context / "bundle", copy_function=_link_or_copy)
    (context / CONTAINERFILE).write_text(containerfile(recipe), encoding="utf-8")


def _link_or_copy(source: str, target: str) -> None:
    try:
        Path(target).hardlink_to(source)
    except OSError:
        shutil.copy2(source, target)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    parser = sub.add_parser(
        "image", help="build an OCI image from a bundle (applied and verified inside)",
        description="envforge image BUNDLE --base IMAGE: writes a build context (Containerfile, "
                    "the bundle, an Apptainer definition) and builds it with podman or buildah "
                    "with no network. Exit 0 built; 1 the build (apply or verify) failed; 2 bad "
                    "input.")
    parser.add_argument("bundle", metavar="BUNDLE", help="a bundle made with --with-envforge")
    parser.add_argument("--base", required=True, metavar="IMAGE",
                        help="the base image: Python >= 3.11 (for envforge) and what the spec "
                             "needs of the host (a g++ where a framework compiles its kernels)")
    parser.add_argument("-t", "--tag", help="the image's name (default localhost/envforge-SPEC)")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="the build context folder (default BUNDLE.image)")
    parser.add_argument("--no-build", action="store_true", help="write the context only")
    parser.add_argument("--oci-archive", action="store_true",
                        help="also save the image as SPEC.oci.tar (what envforge.def starts from)")
    common(parser)
    parser.set_defaults(handler=run_image)

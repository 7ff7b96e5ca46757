"""Container images from a bundle: the build recipe as text, for podman/buildah and Apptainer.

An image is the bundle applied inside a base image with no network and verified there: the
verify step is a build step, so an image whose stack does not work is never produced. What
the image was made from travels with it: the lock's sha256 and the spec as labels, the
bundle (lock and manifest included) and verify's report as files under ``/opt/envforge``.
The Apptainer definition starts from the OCI archive of that image, for SLURM sites where
neither podman nor a registry is at hand.
"""

from __future__ import annotations

import json
import re

from envforge.bundle.manifest import Manifest
from envforge.errors import InputError
from envforge.spec import Frozen

ROOT = "/opt/envforge"
BUNDLE = f"{ROOT}/bundle"
HOME = f"{ROOT}/home"
VENV = f"{ROOT}/venv"
ENVFORGE = f"{VENV}/bin/envforge"
VERIFY_JSON = f"{ROOT}/verify.json"
VERIFY_REPORT = f"{ROOT}/verify-report.md"
LABEL_PREFIX = "io.envforge"


class ImageRecipe(Frozen):
    """What one image is built from."""

    base: str
    tag: str
    spec_name: str
    spec_hash: str
    lock_sha256: str
    platform: str
    envforge_version: str

    @property
    def spec_path(self) -> str:
        return f"{BUNDLE}/specs/{self.spec_name}.toml"

    def labels(self) -> dict[str, str]:
        return {
            f"{LABEL_PREFIX}.spec": self.spec_name,
            f"{LABEL_PREFIX}.spec.sha256": self.spec_hash.removeprefix("sha256:"),
            f"{LABEL_PREFIX}.lock.sha256": self.lock_sha256,
            f"{LABEL_PREFIX}.platform": self.platform,
            f"{LABEL_PREFIX}.version": self.envforge_version,
            f"{LABEL_PREFIX}.verify": "pass",  # the build's verify step fails the build otherwise
            f"{LABEL_PREFIX}.verify.report": VERIFY_REPORT,
            "org.opencontainers.image.base.name": self.base,
            "org.opencontainers.image.title": self.spec_name,
        }


# distribution/reference's grammar (reference.go, v0.5.0, lines 4-26; regexp.go spells it):
#   reference := name [":" tag] ["@" digest];  name := [domain "/"] path-component ["/" ...]
#   domain := host [":" port]; host := domain-name | "[" IPv6 "]"
#   path-component := [a-z0-9]+ (separator [a-z0-9]+)*; separator := [_.] | "__" | "-"+
#   tag := [\w][\w.-]{0,127}; digest := algorithm ":" hex{32,}
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::[\w][\w.-]{{0,127}})?(?:@{_DIGEST})?", re.ASCII)
NAME_MAX = 255  # the grammar's NameTotalLengthMax


def check_reference(value: str, option: str) -> str:
    """``value`` when it is an OCI image reference by distribution/reference's grammar, else
    InputError: a newline or space in --base would become a Containerfile line of its own."""
    match = REFERENCE.fullmatch(value) if len(value) <= 1024 else None
    if match is None or len(match["name"]) > NAME_MAX:
        raise InputError(f"{option} {value!r}: not an image reference ([registry[:port]/]"
                         "path[:tag][@digest], path in lowercase, no spaces), e.g. debian:12")
    return value


def recipe_for(manifest: Manifest, *, base: str, tag: str | None) -> ImageRecipe:
    """The recipe, with ``base`` and ``tag`` checked as image references."""
    check_reference(base, "--base")
    if tag is not None:
        check_reference(tag, "-t")
    return ImageRecipe(base=base, tag=tag or default_tag(manifest.spec_name),
                       spec_name=manifest.spec_name, spec_hash=manifest.spec_hash,
                       lock_sha256=manifest.lock_sha256, platform=manifest.platform,
                       envforge_version=manifest.envforge)


def default_tag(spec_name: str) -> str:
    return "localhost/envforge-" + re.sub(r"[^a-z0-9._-]", "-", spec_name.lower()) + ":latest"


def containerfile(recipe: ImageRecipe) -> str:
    """The Containerfile: envforge from the bundle's wheels, apply offline, verify."""
    labels = " \\\n      ".join(f"{key}={json.dumps(value)}"
                                for key, value in sorted(recipe.labels().items()))
    spec = recipe.spec_path
    return f"""# Made by `envforge image`: {recipe.spec_name} from its bundle, verified while built.
FROM {recipe.base}
COPY bundle {BUNDLE}
ENV ENVFORGE_HOME={HOME}
RUN python3 -m venv {VENV} \\
 && {VENV}/bin/python -m pip install --no-index --no-cache-dir \\
      --find-links {BUNDLE}/envforge-wheels envforge \\
 && {ENVFORGE} apply {spec} --bundle {BUNDLE} --offline --yes --quiet \\
 && {ENVFORGE} verify {spec} --report {VERIFY_REPORT} --json > {VERIFY_JSON}
LABEL {labels}
ENTRYPOINT ["{ENVFORGE}", "run", "{spec}", "--"]
CMD ["python"]
"""


def apptainer_definition(recipe: ImageRecipe, archive: str) -> str:
    """An Apptainer/Singularity definition built from the image's OCI archive."""
    spec = recipe.spec_path
    labels = "\n".join(f"    {key} {value}" for key, value in sorted(recipe.labels().items()))
    return f"""Bootstrap: oci-archive
From: {archive}

%labels
{labels}

%environment
    export ENVFORGE_HOME={HOME}

%runscript
    exec {ENVFORGE} run {spec} -- "$@"

%test
    {ENVFORGE} verify {spec}

%help
    {recipe.spec_name}, applied from its envforge bundle and verified when the OCI image
    was built. A framework that compiles writes its cache under {HOME}: run with --writable-tmpfs
    (or bind a writable folder there) on a read-only image.
"""

"""The spec reference (docs/spec-reference.md) and JSON Schema (docs/envforge-spec.schema.json),
generated from the spec's models so they cannot drift: a test compares them with this output,
and a key without a line in ``KEYS`` fails that test. ``python -m envforge.app.specdoc``
rewrites both files, the installed packs' sections with them."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from envforge.packapi import Registry
from envforge.spec import PLATFORMS, PlatformSpec, ProjectSection, SpecPack

REFERENCE = Path("docs/spec-reference.md")
SCHEMA = Path("docs/envforge-spec.schema.json")

# "section.key" -> (what it means, an example value as TOML): the core's sections; a pack's
# come from it (FrameworkPack.spec_keys), see keys()
KEYS: dict[str, tuple[str, str]] = {
    "project.name": ("the spec's name: the lock is `locks/NAME.lock`, the environment "
                     "`envs/NAME`", '"theano-cpu"'),
    "project.platforms": ("the platforms to lock (each gets its own merged view)",
                          '["linux-64", "win-64"]'),
    "project.description": ("one line for people", '"Python 3.7, Theano-PyMC 1.0.5"'),
    "python.version": ("the environment's Python; a patch (`3.7.16`) is what PyPI is resolved "
                       "for, else the Python found for it", '"3.7"'),
    "environment.kind": ("venv (a discovered Python), conda (rattler) or debian (Debian's "
                         "python3.X from the archive)", '"venv"'),
    "environment.name": ("the conda environment's name (default: the spec's)", '"theano"'),
    "environment.channels": ("conda channels, in priority order", '["conda-forge"]'),
    "environment.pythonpath": ("folders put on the environment's PYTHONPATH (activation and "
                               "`envforge run`), relative to the spec's folder: init's is the "
                               "repository of a setup.py, as `pip install -e .` puts it on "
                               "sys.path", '["../pygcn"]'),
    "conda.packages": ("conda match specs", '["numpy=1.19.5", "mkl"]'),
    "pypi.index": ("the index that replaces PyPI", '"https://pypi.org/simple"'),
    "pypi.packages": ("PEP 508 requirements; `name @ git+URL@REV` and `name @ file:///…` "
                      "are locked as files with their sha256", '["numpy==1.19.5"]'),
    "pypi.provided_elsewhere": ("dependencies Debian or conda already provide: resolved, "
                                "not installed", '["numpy"]'),
    "pypi.as_of": ("resolve as of this day (uv's exclude-newer; exact pins exempt)",
                   "2019-08-15"),
    "pypi.as_of_packages": ("a day for these packages alone (uv's exclude-newer-package), "
                            "replacing as_of for them: what its day has no installable "
                            "release of",
                            "{ tensorflow = 2019-08-15 }"),
    "pypi.find_links": ("folders or pages of distribution files besides the index",
                        '["./wheels"]'),
    "pypi.extra_indexes": ("indexes searched after `index` (a name comes from the first "
                           "that has it); recorded in the lock", '["https://mirror.example/simple"]'),
    "pypi.constraints": ("requirement lines that limit versions without adding packages "
                         "(uv's --constraint)", '["numpy<1.20"]'),
    "pypi.overrides": ("requirement lines that replace every package's requirement on that "
                       "name (uv's --override)", '["protobuf<4"]'),
    "pypi.build_constraints": ("pins for what sdist builds install: lock, apply, bundle",
                               '["Cython==0.29.14"]'),
    "pypi.extra_build_dependencies": ("what an sdist's setup.py imports without declaring it "
                                      "(uv's extra-build-dependencies), installed into its "
                                      "build at the environment's version where it has it",
                                      '{ pycocotools = ["Cython", "numpy"] }'),
    "pypi.only_binary": ("packages (or \":all:\") taken only as wheels", '["numpy"]'),
    "pypi.no_binary": ("packages (or \":all:\") installed from their sdist", '["gensim"]'),
    "debian.suite": ("the Debian release whose archive provides packages", '"bookworm"'),
    "debian.mirror": ("the archive's URL", '"https://deb.debian.org/debian"'),
    "debian.components": ("archive components", '["main"]'),
    "debian.packages": ("binary packages, unpacked into the environment (no root)",
                        '["libopenblas0-pthread"]'),
    "debian.dependencies": ("`named`: exactly `packages`; `closure`: with every package their "
                            "Pre-Depends and Depends pull in, as apt chooses it (the base "
                            "system, Essential or Priority required, left to the host)",
                            '"closure"'),
    "debian.keyring": ("the OpenPGP keyring InRelease is checked against (default: Debian's)",
                       '"/usr/share/keyrings/debian-archive-keyring.gpg"'),
    "cuda.version": ("the CUDA toolkit: `X.Y` exactly or `>=X.Y`", '">=11.8"'),
    "cuda.source": ("`system`: found and checked on the host, never installed", '"system"'),
    "cudnn.version": ("the cuDNN release", '"7.6.5"'),
    "cudnn.archive": ("the archive's file name (when not a known artifact)",
                      '"cudnn-10.2-linux-x64-v7.6.5.32.tgz"'),
    "cudnn.url": ("where the archive can be downloaded, when it can", '"https://…"'),
    "cudnn.sha256": ("the archive's sha256 (with `archive`)", '"0123…"'),
    "compiler.kind": ("the C++ compiler Theano uses", '"gcc"'),
    "compiler.version": ("MinGW-w64's release", '"8.1.0"'),
    "compiler.threads": ("MinGW-w64's thread model", '"posix"'),
    "compiler.exceptions": ("MinGW-w64's exception model", '"seh"'),
    "verify.kernels": ("the kernels verify compiles and checks against NumPy: the core's "
                       "(elementwise, gemm, conv, grad, train) or a mounted pack's (Theano: "
                       "scan, random, softmax_xent)",
                       '["elementwise", "gemm", "conv"]'),
    "verify.seed": ("the inputs' random seed", "22"),
    "verify.elementwise_size": ("the elementwise kernel's length", "10000"),
    "verify.gemm_size": ("the GEMM kernel's matrix side", "256"),
    "verify.conv": ("the convolution kernel's shape", "{ batch = 2, size = 32 }"),
    "verify.conv.batch": ("images per batch", "2"),
    "verify.conv.size": ("image side", "32"),
    "verify.conv.channels": ("input channels, then each layer's output channels",
                             "[3, 32, 64, 64, 64]"),
    "verify.rtol": ("relative tolerance against the references", "1e-4"),
    "verify.atol": ("absolute tolerance against the references", "1e-6"),
    "verify.min_gpu_speedup": ("the least GPU speed-up over the CPU that passes", "5.0"),
    "verify.repeats": ("timed runs per kernel; the best counts", "3"),
    "path.scope": ("where the environment's PATH goes: only its activation (env) or the "
                   "Windows user PATH (user)", '"env"'),
}


class DocumentedPack(SpecPack, Protocol):
    """What the reference reads of a pack: its section's model and its keys' meanings."""

    @property
    def spec_keys(self) -> Mapping[str, tuple[str, str]]: ...


def keys(registry: Registry[DocumentedPack]) -> dict[str, tuple[str, str]]:
    """Every documented key: the core's, then each pack's section's."""
    return {**KEYS, **{key: row for pack in registry for key, row in pack.spec_keys.items()}}


def sections(registry: Registry[DocumentedPack]) -> dict[str, tuple[type[BaseModel], bool]]:
    """Each top-level table, its model, and whether a spec must have it."""

    found: dict[str, tuple[type[BaseModel], bool]] = {"project": (ProjectSection, True)}
    for name, field in PlatformSpec.model_fields.items():
        if name in ("platform", "packs"):
            continue
        model = next(a for a in _args(field.annotation) if isinstance(a, type)
                     and issubclass(a, BaseModel))
        found[name] = (model, field.is_required())
    found.update({pack.name: (pack.section, False) for pack in registry})
    return found


def _args(annotation: Any) -> tuple[Any, ...]:
    return getattr(annotation, "__args__", None) or (annotation,)


def json_schema(registry: Registry[DocumentedPack]) -> dict[str, Any]:
    """The whole spec file's schema; every section but project takes ``platform.<name>``."""
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    documented = keys(registry)
    for name, (model, _) in sections(registry).items():
        schema = model.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        _describe(schema, name, defs, documented)
        if name != "project":
            override = copy.deepcopy(schema)
            override.pop("required", None)
            override["title"] = f"[{name}] for one platform"
            schema["properties"]["platform"] = {
                "type": "object", "additionalProperties": False,
                "description": "values that replace the general ones for one platform "
                               "(`packages` lists are added to)",
                "properties": {p: override for p in PLATFORMS}}
        properties[name] = schema
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://envforge.invalid/envforge-spec.schema.json",
            "title": "envforge spec", "type": "object", "additionalProperties": False,
            "required": ["project"], "properties": properties, "$defs": defs}


def _describe(schema: dict[str, Any], prefix: str, defs: dict[str, Any],
              documented: Mapping[str, tuple[str, str]]) -> None:
    for key, prop in schema.get("properties", {}).items():
        path = f"{prefix}.{key}"
        if path in documented:
            prop["description"] = documented[path][0]
        ref = prop.get("$ref", "")
        if ref.startswith("#/$defs/"):
            _describe(defs[ref.removeprefix("#/$defs/")], path, defs, documented)


def reference(registry: Registry[DocumentedPack]) -> str:
    """The Markdown reference: every section and key with type, default and example."""
    schema, documented = json_schema(registry), keys(registry)
    lines = ["# Spec reference", "",
             "Generated from `envforge/spec/models.py` by `python -m envforge.app.specdoc` "
             "(a test keeps it current). Every section but `[project]` may carry "
             "`[SECTION.platform.win-64]` / "
             "`[SECTION.platform.linux-64]` tables whose values replace the general ones for "
             "that platform (`packages` lists are added to). Editors: point Taplo / Even Better "
             "TOML at [envforge-spec.schema.json](envforge-spec.schema.json), e.g. with "
             "`#:schema ../docs/envforge-spec.schema.json` as a spec's first line.", ""]
    for name, (_, required) in sections(registry).items():
        lines += [f"## [{name}]" + (" (required)" if required else ""), "",
                  "| key | type | default | meaning | example |", "|---|---|---|---|---|"]
        lines += _rows(schema["properties"][name], name, schema["$defs"], documented)
        lines.append("")
    return "\n".join(lines)


def _rows(section: dict[str, Any], prefix: str, defs: dict[str, Any],
          documented: Mapping[str, tuple[str, str]]) -> list[str]:
    rows = []
    required = set(section.get("required", []))
    for key, prop in section.get("properties", {}).items():
        if key == "platform":
            continue
        path = f"{prefix}.{key}"
        meaning, example = documented[path]
        default = "required" if key in required else _toml(prop.get("default"))
        rows.append(f"| `{key}` | {_type(prop)} | {default} | {meaning} | `{example}` |")
        ref = prop.get("$ref", "")
        if ref.startswith("#/$defs/"):
            rows += [row.replace("| `", f"| `{key}.", 1)
                     for row in _rows(defs[ref.removeprefix("#/$defs/")], path, defs,
                                      documented)]
    return rows


def _type(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        kinds = [_type(p) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(kinds)
    if "enum" in prop:
        return " \\| ".join(f'"{v}"' for v in prop["enum"])
    if "const" in prop:
        return f'"{prop["const"]}"'
    if "$ref" in prop:
        return "table"
    kind = prop.get("type", "any")
    if kind == "array":
        return f"array of {_type(prop.get('items', {}))}"
    if kind == "object":
        return "table of strings" if prop.get("additionalProperties") else "table"
    if kind == "string" and prop.get("format") == "date":
        return "date"
    if "pattern" in prop:
        return f"string `{prop['pattern']}`".replace("|", "\\|")
    names = {"string": "string", "integer": "integer", "number": "float", "boolean": "boolean"}
    return names.get(str(kind), str(kind))


def _toml(value: Any) -> str:
    if value is None:
        return "—"
    return f"`{json.dumps(value)}`"


def write(root: Path, registry: Registry[DocumentedPack], *, check: bool) -> int:
    """Write (or with ``check``, compare) both files under the repository ``root``; 1 when
    a compared file is stale."""
    wanted = {root / REFERENCE: reference(registry),
              root / SCHEMA: json.dumps(json_schema(registry), indent=2, sort_keys=True) + "\n"}
    if check:
        stale = [str(p) for p, text in wanted.items()
                 if not p.is_file() or p.read_text(encoding="utf-8") != text]
        if stale:
            print(f"stale: {', '.join(stale)}; run `python -m envforge.app.specdoc`")
        return 1 if stale else 0
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return 0

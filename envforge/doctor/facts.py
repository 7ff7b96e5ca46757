"""The host as doctor saw it, once, as frozen data; and what a spec's lock expects of it.

``observe`` (the only impure part of doctor) fills ``HostFacts``; rules read nothing
else, so a rule is tested by building a real layout, observing it, and judging the
facts. Paths are kept as strings: a Windows-shaped world is observed on Linux (PATH
split on ``;``, DLL files in folders) and the facts round-trip through JSON.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field, SerializeAsAny, ValidationInfo, model_validator

from envforge.host.cmdoutput import CommandOutput as CommandOutput

# host/ observes the driver, GPUs and toolkits; the facts hold its models as they are
from envforge.host.cuda import Driver as Driver
from envforge.host.cuda import Gpu as Gpu
from envforge.host.cuda import Toolkit as FoundToolkit
from envforge.packapi import Pack, Registry
from envforge.platforms import PLATFORMS, TargetPlatform
from envforge.spec import Frozen, Platform

# Environment variables doctor keeps: the ones that steer CUDA and compilers (a pack adds
# its own: FrameworkPack.doctor_variables). Everything else (tokens, passwords) never enters
# the facts, the JSON or a report.
RELEVANT_VARIABLES = (
    "PATH", "LD_LIBRARY_PATH", "CUDA_ROOT", "CUDA_PATH", "CUDA_HOME", "HOME", "USERPROFILE",
    "HOMEDRIVE", "HOMEPATH", "CONDA_PREFIX", "VIRTUAL_ENV", "CPATH", "LIBRARY_PATH",
    "ProgramFiles",
)


class SearchEntry(Frozen):
    """One entry of PATH or LD_LIBRARY_PATH: as written, and the folder it names."""

    variable: str
    index: int
    entry: str
    path: str


class DirListing(Frozen):
    """A folder doctor looked into: whether it exists and the files of interest in it."""

    path: str
    exists: bool
    names: tuple[str, ...] = ()


class CudnnHeader(Frozen):
    """cuDNN's version as its header says (``cudnn_version.h`` since 8, else ``cudnn.h``)."""

    include: str
    file: str
    version: str  # "7.6.5"


class Toolkit(FoundToolkit):
    """A toolkit host/ found, with the cuDNN header its include folder holds."""

    cudnn: CudnnHeader | None = None


class CudaVariable(Frozen):
    """CUDA_ROOT / CUDA_PATH / CUDA_HOME: the folder it names and that folder's toolkit version."""

    name: str
    value: str
    exists: bool
    version: str | None


class Compiler(Frozen):
    path: str
    path_index: int  # position of its folder on PATH; -1: a framework's fallback outside PATH
    found_by: str
    version: str | None
    thread_model: str | None
    output: CommandOutput | None = None


class ConfigFile(Frozen):
    """A configuration file a framework reads (or, for one it never looks at, does not)."""

    path: str
    exists: bool
    read: bool
    text: str | None = None
    # dotted names as the framework's parser gives them, and the 1-based line of each key
    flags: dict[str, str] = Field(default_factory=dict)
    lines: dict[str, int] = Field(default_factory=dict)
    error: str | None = None


class FrameworkConfig(Frozen):
    """One framework's configuration on this host as its pack observed it (Theano: its
    .theanorc files, THEANO_FLAGS, cuda.root), and what it asks the core to look into; a
    pack keeps what only its own rules read in a model of its own that extends this one
    (``FrameworkPack.config_model``)."""

    name: str = ""  # how findings name the framework ("Theano")
    files: tuple[ConfigFile, ...] = ()  # in the framework's reading order
    files_label: str = "config"  # how the host table names them (".theanorc")
    ignored: ConfigFile | None = None  # looks like one of its files, but is never read
    variable: str | None = None  # its settings variable (THEANO_FLAGS) and that one's value
    variable_value: str | None = None
    cuda_root: str | None = None  # the toolkit it uses when nothing sets one
    cuda_root_from: str = ""
    cuda_root_label: str | None = None  # how the host table names it
    cuda_root_setting: str = ""  # the setting that names it ("cuda.root")
    cuda_root_variables: tuple[str, ...] = ()  # the variables it reads for it, in order
    # it re-orders PATH before loading the CUDA libraries here: the knowledge row that says
    # so, how (Theano's: "sorted, lower-cased"), and PATH's entries (their indexes) in the
    # order it leaves them, which the pack computes: the core only reads that order
    path_rewrite: str | None = None
    path_rewrite_how: str = ""
    path_order: tuple[int, ...] = ()
    # the C++ compiler it takes when none is on PATH, and why (Theano's win32 fallback)
    compiler_fallback: str | None = None
    compiler_fallback_from: str = ""
    without_gpu: str = ""  # what it does when its GPU cannot start
    cpu_setting: str = ""  # the setting that keeps it on the CPU
    # knowledge rows behind the core's findings about it: "cuda-root", "gpu-activated"
    sources: dict[str, str] = Field(default_factory=dict)
    roots: tuple[str, ...] = ()  # toolkit-shaped folders its settings name (bin, lib, include)
    folders: tuple[str, ...] = ()  # library folders its settings name
    include_dirs: tuple[str, ...] = ()  # header folders its settings name
    libraries: tuple[str, ...] = ()  # libraries it links by name


class Environment(Frozen):
    """The Python environment judged, and what is installed there (read from metadata)."""

    prefix: str
    exists: bool
    found_by: str  # "spec", "VIRTUAL_ENV", "CONDA_PREFIX"
    activated: bool = False  # its envforge activation (envforge-env.json) was applied
    # package (a pack's distributions counted as the package they install: theano) ->
    # version, and the metadata file each version came from
    versions: dict[str, str] = Field(default_factory=dict)
    sources: dict[str, str] = Field(default_factory=dict)


class RegistryPath(Frozen):
    """PATH as a new shell on Windows will get it: the system then the user value, expanded."""

    system: str | None
    user: str | None
    entries: tuple[str, ...]


class ConfigPack(Pack, Protocol):
    """What facts read back ask of a pack: the model of its framework's table."""

    @property
    def config_model(self) -> type[FrameworkConfig]: ...


class HostFacts(Frozen):
    platform: Platform
    cwd: str
    environ: dict[str, str]
    path: tuple[SearchEntry, ...]
    library_path: tuple[SearchEntry, ...]
    system_lib_dirs: tuple[str, ...]
    system_include_dirs: tuple[str, ...]  # the compiler's default header folders
    dirs: dict[str, DirListing]
    toolkits: tuple[Toolkit, ...]
    cuda_variables: tuple[CudaVariable, ...]
    cudnn_headers: dict[str, CudnnHeader]  # include folder -> the header found there
    driver: Driver
    gpus: tuple[Gpu, ...] = ()
    gpu_query: CommandOutput | None = None
    gxx: Compiler | None = None
    msvc: SearchEntry | None = None
    # by pack name, each in its pack's model (``FrameworkPack.config_model``)
    frameworks: dict[str, SerializeAsAny[FrameworkConfig]] = Field(default_factory=dict)
    env: Environment | None = None
    registry_path: RegistryPath | None = None
    # Unversioned names the dynamic loader's cache (``ldconfig -p``) resolves: dlopen finds
    # these even when no folder on LD_LIBRARY_PATH holds them.
    ld_cache: dict[str, str] = Field(default_factory=dict)
    # What doctor shows of an environment and checks against its lock: Python, then each
    # pack's packages (``FrameworkPack.doctor_packages``), named when the host was observed.
    packages: tuple[str, ...] = ("python",)
    # The packs (by name) whose own settings on this host ask for a GPU
    # (``FrameworkPack.gpu_intended``): asked once by ``diagnose``, before any rule runs, so
    # a rule reads the answer here instead of asking the packs itself.
    gpu_frameworks: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _pack_models(cls, data: Any, info: ValidationInfo) -> Any:
        """Facts read back (``--json``, a stored report) type each framework's table by its
        pack's model, the packs being the ``registry`` of the validation context; one built
        in code is already typed."""
        frameworks = data.get("frameworks") if isinstance(data, dict) else None
        if not isinstance(frameworks, dict):
            return data
        registry: Registry[ConfigPack] = (info.context or {}).get("registry") or Registry(())
        models = {pack.name: pack.config_model for pack in registry}
        typed = {name: models[name].model_validate(table)
                 if isinstance(table, dict) and name in models else table
                 for name, table in frameworks.items()}
        return {**data, "frameworks": typed}

    def listing(self, path: str) -> DirListing | None:
        return self.dirs.get(path)

    def holds(self, folder: str, name: str) -> bool:
        """Whether ``folder`` holds a file ``name`` (case-insensitive on Windows, as its loader)."""
        listing = self.dirs.get(folder)
        return listing is not None and any(self.target.same_file_name(name, n)
                                           for n in listing.names)

    @property
    def target(self) -> TargetPlatform:
        return PLATFORMS[self.platform]


class Expected(Frozen):
    """What a spec's lock says this host should have, for the platform doctor runs on."""

    spec: str
    platform: Platform
    prefix: str
    env_kind: str
    cuda: str | None  # "10.2", or ">=11.8" for a minimum
    cudnn: str | None
    versions: dict[str, str]
    device: str
    settings: dict[str, dict[str, str]] = Field(default_factory=dict)  # by pack; {prefix} filled
    compiler_threads: str | None = None

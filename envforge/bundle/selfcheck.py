"""Does the envforge a bundle carries (``--with-envforge``) read the bundle's spec and lock?

A bundle whose files all match can still fail to apply: its envforge is envforge's core
dependencies only (NumPy, uv and py-rattler are the ``resolve`` extra), and an apply that
reached for one crashed on the closed host. So ``bundle --check`` runs that envforge, from
its own wheels unpacked into a temporary folder, in an interpreter of the wheels' Python
started with ``-I -S`` (no site-packages: nothing of this host's can stand in). It does
what apply does before it touches the host: read the spec, check the lock against it, make
the step list for the bundle's platform; and it imports every module apply may import
lazily (all of envforge but the resolvers and the probes, which run in the environment).
A few seconds (7 s for a Keras bundle on two busy cores), whatever the bundle's size;
planning itself reads the host (its Python 3.7, a cuDNN archive to stage) and is left to
apply there.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

from envforge.bundle.manifest import Manifest
from envforge.errors import StepError
from envforge.host.interpreters import find_interpreter
from envforge.lockfile import LockPack, load_lock
from envforge.packapi import Registry
from envforge.platforms import host_platform

TIMEOUT_S = 300

# Run by the bundle's envforge: argv = site folder, spec, locks folder, platform, home, conda.
_SCRIPT = """
import importlib, pkgutil, sys
from pathlib import Path
site, spec, locks, platform, home, conda = sys.argv[1:7]
sys.path.insert(0, site)
import envforge
if not Path(envforge.__file__).resolve().is_relative_to(Path(site).resolve()):
    sys.exit(f"envforge was imported from {envforge.__file__}, not the bundle's wheels")
from envforge.app.context import Host, Options, context_for
from envforge.app.project import Project
from envforge.plan import build_steps
project = Project.load(Path(spec), Path(locks))
ctx = context_for(project, Host(platform=platform, environ={"ENVFORGE_HOME": home},
                                home=Path(home)), Options(prefix=Path(home) / "env"))
build_steps(ctx)
skip = ("envforge.resolve.", "envforge.__main__")
if conda != "conda":
    skip += ("envforge.host.conda_install",)
for module in pkgutil.walk_packages(envforge.__path__, "envforge."):
    if not module.name.startswith(skip) and not module.name.endswith(".probe"):
        importlib.import_module(module.name)
"""


def check_own_envforge(bundle: Path, manifest: Manifest,
                       registry: Registry[LockPack]) -> tuple[list[str], str | None]:
    """(problems, why it was not run): run the bundle's envforge as apply would start.

    Not run where the bundle has no envforge wheels, is for another platform or no
    interpreter of the wheels' Python is found here. Call it on a bundle that
    ``check_bundle`` found whole: its wheels and lock are then the manifest's."""
    wheels = manifest.envforge_wheels
    if wheels is None:
        return [], "the bundle carries no envforge (made without --with-envforge)"
    if host_platform().name != manifest.platform:
        return [], f"its envforge's wheels are for {manifest.platform}, this host is not"
    try:
        python = find_interpreter(wheels.python).executable
    except StepError:
        return [], f"no Python {wheels.python} here to run its envforge's wheels"
    own = [bundle / f.path for f in manifest.files if f.source == "envforge"]
    plock = load_lock(bundle / manifest.lock, registry).platforms.get(manifest.platform)
    environment = plock.environment if plock is not None else ""  # conda: py-rattler too
    with tempfile.TemporaryDirectory(prefix="envforge-selfcheck-") as tmp:
        site, home = Path(tmp) / "site", Path(tmp) / "home"
        for wheel in own:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(site)  # zipfile drops ".." and absolute member names
        home.mkdir()
        environ = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
                   "ENVFORGE_HOME": str(home)}
        if "SYSTEMROOT" in os.environ:  # Windows' sockets and random need it
            environ["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
        try:
            done = subprocess.run(
                [str(python), "-I", "-S", "-c", _SCRIPT, str(site),
                 str(bundle / manifest.spec), str((bundle / manifest.lock).parent),
                 manifest.platform, str(home), environment],
                env=environ, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return [f"its envforge did not finish reading the spec and lock in {TIMEOUT_S} s"], None
    if done.returncode == 0:
        return [], None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    last = lines[-1].strip() if lines else f"exit code {done.returncode}"
    return [f"its own envforge (Python {wheels.python}, {wheels.folder}/) cannot apply it: "
            f"{last}"], None

"""envforge's requirements for a Windows CPython, from pyproject.toml: the runtime, resolve and
dev dependencies less the linters, plus what only Windows pulls in (``pip download --platform`` evaluates
markers as the Linux host does, so win32-only dependencies are named here)."""

import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

WIN32_ONLY = ["colorama", "pywin32-ctypes"]  # pytest, click, tqdm; keyring (conda-lock)
LINT_ONLY = {"ruff", "mypy"}  # `make lint` runs them on Linux; no test imports them
# NumPy 2 calls ucrtbase's crealf, which Wine 8 does not implement (the process aborts).
WINE_PINS = {"numpy": "numpy>=1.24,<2"}

with open(sys.argv[1], "rb") as handle:
    project = tomllib.load(handle)["project"]
extras = project["optional-dependencies"]
for text in [*project["dependencies"], *extras["resolve"], *extras["dev"], *WIN32_ONLY]:
    req = Requirement(text)
    name = canonicalize_name(req.name)
    if name != "envforge" and name not in LINT_ONLY:
        req.marker = None
        print(WINE_PINS.get(name, str(req)))

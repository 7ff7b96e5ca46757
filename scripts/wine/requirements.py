"""envforge's requirements for a Windows CPython, from pyproject.toml: the runtime, resolve and
dev dependencies, plus what only Windows pulls in (pip download --platform evaluates markers as
the Linux host, so win32-only dependencies are named here)."""

import sys
import tomllib

WIN32_ONLY = ["colorama", "pywin32-ctypes"]  # pytest, click, tqdm; keyring (conda-lock)
# NumPy 2.x calls ucrtbase's crealf, which Wine 8 does not implement (the process aborts).
WINE_PINS = {"numpy": "numpy>=1.24,<2"}

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = project["optional-dependencies"]
reqs = [*project["dependencies"], *extras["resolve"], *extras["dev"], *WIN32_ONLY]
for req in reqs:
    name = req.split(";")[0].strip()
    if not name.startswith("envforge"):
        print(WINE_PINS.get(name.split(">")[0].split("<")[0].split("=")[0].strip(), name))

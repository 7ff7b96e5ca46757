#!/usr/bin/env bash
# Provision and verify specs/theano-gpu-linux.toml (Debian bullseye: Python 3.9.2, NumPy
# 1.19.5) on a closed GPU host from an offline bundle, run theano.scan with device=cuda
# (scan-gpu.txt says whether the compiled C loop ran, on the GPU), then the two negative
# controls. Run from the repo root with the bundle at
# .bundle/gpu (envforge bundle locks/theano-gpu-linux.lock -o .bundle/gpu --with-envforge
# --envforge-python 3.12). Everything it reports goes to $OUT.
set -u
OUT=${OUT:-/tmp/envforge-gpu}
mkdir -p "$OUT"
BUNDLE=.bundle/gpu
SPEC=specs/theano-gpu-linux.toml
export ENVFORGE_HOME=/tmp/envforge-home PYTHONUNBUFFERED=1 COLUMNS=160
PREFIX=$ENVFORGE_HOME/data/envs/theano-gpu-linux
step() { echo; echo "== $* ($(date +%T))"; }
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "-> exit $rc in $((SECONDS - t0)) s"; return $rc; }

step host
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv | tee "$OUT/host.txt"
python3 --version | tee -a "$OUT/host.txt"

step "install envforge from the bundle (no network, no uv)"
python3 -m venv /tmp/ev && /tmp/ev/bin/python -m pip install -q --no-index \
  --find-links "$BUNDLE/envforge-wheels" envforge || exit 1
EF=/tmp/ev/bin/envforge

step "doctor before apply"
$EF doctor "$SPEC" --report "$OUT/doctor-before.md" > "$OUT/doctor-before.txt" 2>&1
echo "-> exit $?"

step "bundle check, plan, apply, no-op apply"
timed $EF bundle --check "$BUNDLE"
$EF plan "$SPEC" --bundle "$BUNDLE" > "$OUT/plan.txt" 2>&1; echo "-> plan exit $?"
timed $EF apply "$SPEC" --bundle "$BUNDLE" --yes 2>&1 | tee "$OUT/apply.txt"
timed $EF apply "$SPEC" --bundle "$BUNDLE" --yes 2>&1 | tee "$OUT/apply-noop.txt"

step "verify (first: compiles every kernel)"
timed $EF verify "$SPEC" --junit "$OUT/verify.xml" --report "$OUT/verify.md" \
  --save-probe "$OUT/probe.json" 2>&1 | tee "$OUT/verify.txt"
step "theano.scan with device=cuda: the compiled C loop, on the GPU? (scan_check.py)"
# Theano-PyMC 1.0.5 compiles scan_perform.c on Python 3.9 (docs/gpu/scan-perform.md).
THEANO_FLAGS=device=cuda,floatX=float32 timed $EF run "$SPEC" -- python docs/gpu/scan_check.py \
  > "$OUT/scan-gpu.json" 2> "$OUT/scan-gpu.err"
python3 - "$OUT/scan-gpu.json" <<'PY' | tee "$OUT/scan-gpu.txt"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
r = json.loads([l for l in lines if l.startswith("{")][-1])
print("C scan ran:", "yes" if r["c_scan"] else "NO", "| scan on the GPU:",
      "yes" if r["gpu_ok"] and r["scan_on_gpu"] == [True] else "NO",
      "| graph:", ", ".join(r["graph"]), "| python", r["python"], "numpy", r["numpy"],
      "| loop:", r["scan_loops"], "|", r["scan_perform"])
PY

step "verify again (per-environment compile cache)"
t0=$SECONDS; $EF verify "$SPEC" --json > "$OUT/verify-second.json"; echo "-> exit $? in $((SECONDS - t0)) s"

step "doctor after apply"
$EF doctor "$SPEC" --report "$OUT/doctor-after.md" > "$OUT/doctor-after.txt" 2>&1
echo "-> exit $?"

step "negative control 1: libgpuarray's library links removed"
# On this image ld.so.cache lists the toolkit's own unversioned libnvrtc.so/libcublas.so, so
# removing envforge's links alone changes nothing. The cache is masked in a mount namespace,
# as on a host without those -dev names (the host of GPU.md): verify must then fail and
# name the library libgpuarray could not load.
{ echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; ldconfig -p | grep -E 'lib(nvrtc|cublas|cuda)\.so( |$)'; } \
  > "$OUT/loader.txt" 2>&1
: > /tmp/empty-ld-cache
mv "$PREFIX/envforge-libs" "$PREFIX/envforge-libs.off"
unshare -m sh -c "mount --bind /tmp/empty-ld-cache /etc/ld.so.cache && \
  $EF verify $SPEC --save-probe $OUT/negative-links-probe.json" > "$OUT/negative-links.txt" 2>&1
echo "-> exit $?"
mv "$PREFIX/envforge-libs.off" "$PREFIX/envforge-libs"

step "negative control 2: the host's cuDNN 9 with dnn enabled"
inc=$(dirname "$(find /usr /opt -name cudnn_version.h -path '*include*' 2>/dev/null | head -1)")
lib=$(dirname "$(find /usr /opt -name 'libcudnn.so' 2>/dev/null | head -1)")
echo "cuDNN headers in $inc, libraries in $lib"
THEANO_FLAGS="dnn.enabled=True,dnn.include_path=$inc,dnn.library_path=$lib" \
  timed $EF verify "$SPEC" --save-probe "$OUT/negative-cudnn-probe.json" > "$OUT/negative-cudnn.txt" 2>&1

step "rollback"
timed $EF rollback "$SPEC"
test ! -e "$PREFIX" && echo "prefix removed"

# The device tool returns at most 8 files: everything goes back as one archive.
tar czf /tmp/envforge-gpu-results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* \
  && mv /tmp/envforge-gpu-results.tgz "$OUT/"

#!/usr/bin/env bash
# Keras 2.3.1 on Theano's GPU back-end with h5py (specs/keras-theano-gpu-linux.toml) on a closed
# GPU host, applied from an offline bundle by the bundle's own envforge, which has no NumPy
# (issue 26: this apply crashed with "No module named 'numpy'"), verified, and a Keras model
# trained on the GPU, saved to HDF5 and loaded back (keras_h5_check.py). Then doctor on
# torch14-gpu's lock: only the knowledge and the host's GPUs travel, no torch wheel.
# Bundle: envforge bundle LOCK -o .bundle/kgpu --with-envforge --envforge-python 3.12, with the
# spec and lock copied beside each other first (docs/gpu/H200.md). TORCH holds specs/ and
# locks/ of torch14-gpu and torch14-cpu, written by the bundle's envforge. Everything it
# reports goes to $OUT.
# KEEP=1 leaves the environment applied (no second verify, no rollback) for suite-h200.sh.
set -u
OUT=${OUT:-/tmp/envforge-gpu}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
BUNDLE=${BUNDLE:-.bundle/kgpu}
TORCH=${TORCH:-.bundle/torch}
SPEC=$BUNDLE/specs/keras-theano-gpu-linux.toml
export ENVFORGE_HOME=/tmp/envforge-home PYTHONUNBUFFERED=1 COLUMNS=160
PREFIX=$ENVFORGE_HOME/data/envs/keras-theano-gpu-linux
step() { echo; echo "== $* ($(date +%T))"; }
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "-> exit $rc in $((SECONDS - t0)) s"; return $rc; }

step host
{ nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv
  python3 --version; nproc; } 2>&1 | tee "$OUT/host.txt"

step "install envforge from the bundle (no network, no uv)"
python3 -m venv /tmp/ev && /tmp/ev/bin/python -m pip install -q --no-index \
  --find-links "$BUNDLE/envforge-wheels" envforge || exit 1
EF=/tmp/ev/bin/envforge
/tmp/ev/bin/python -m pip list --format=freeze > "$OUT/ev-packages.txt" 2>&1
/tmp/ev/bin/python -c "import numpy" > "$OUT/ev-numpy.txt" 2>&1
echo "numpy in envforge's venv: exit $? ($(tail -1 "$OUT/ev-numpy.txt"))" | tee -a "$OUT/ev-numpy.txt"

step "bundle check, plan, apply, no-op apply"
timed $EF bundle --check "$BUNDLE" 2>&1 | tee "$OUT/bundle-check.txt"
$EF plan "$SPEC" --bundle "$BUNDLE" > "$OUT/plan.txt" 2>&1; echo "-> plan exit $?"
timed $EF apply "$SPEC" --bundle "$BUNDLE" --yes 2>&1 | tee "$OUT/apply.txt"
timed $EF apply "$SPEC" --bundle "$BUNDLE" --yes 2>&1 | tee "$OUT/apply-noop.txt"

step "verify (first: compiles every kernel)"
timed $EF verify "$SPEC" --junit "$OUT/verify.xml" --report "$OUT/verify.md" \
  --save-probe "$OUT/probe.json" > "$OUT/verify.txt" 2>&1
tail -3 "$OUT/verify.txt"
grep -E '(FAIL|fail)' "$OUT/verify.md" | head -20

step "Keras on the GPU: train, model.save to HDF5, load_model, compare (keras_h5_check.py)"
timed $EF run "$SPEC" -- python "$HERE/keras_h5_check.py" > "$OUT/keras-h5.json" 2> "$OUT/keras-h5.err"
tail -1 "$OUT/keras-h5.json"; grep -m3 -E 'Mapped|Error' "$OUT/keras-h5.err"

if [ -z "${KEEP:-}" ]; then
  step "verify again (compile cache warm)"
  timed $EF verify "$SPEC" --json > "$OUT/verify-second.json" 2> /dev/null
fi

step "doctor on torch14-gpu's lock (torch 1.4.0's wheel: sm_35-sm_75) and torch14-cpu's"
$EF doctor "$TORCH/specs/torch14-gpu.toml" --report "$OUT/torch-doctor.md" --json \
  > "$OUT/torch-doctor.json" 2> /dev/null; echo "-> torch14-gpu: exit $?"
$EF doctor "$TORCH/specs/torch14-cpu.toml" --json > "$OUT/torch-cpu-doctor.json" 2> /dev/null
echo "-> torch14-cpu: exit $?"
python3 - "$OUT/torch-doctor.json" "$OUT/torch-cpu-doctor.json" <<'PY' | tee "$OUT/torch-doctor.txt"
import json, sys
for path in sys.argv[1:]:
    for f in json.load(open(path))["findings"]:
        print(path.rsplit("/", 1)[-1], f["severity"], f["id"], "|", f["title"])
        if f["id"] == "torch.gpu-arch":
            print("   fix:", (f.get("fix") or {}).get("text"))
PY

if [ -z "${KEEP:-}" ]; then
  step rollback
  timed $EF rollback "$SPEC"
  test ! -e "$PREFIX" && echo "prefix removed"
fi

# The device tool returns at most 8 files: everything goes back as one archive.
tar czf /tmp/envforge-gpu-results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* \
  && mv /tmp/envforge-gpu-results.tgz "$OUT/"

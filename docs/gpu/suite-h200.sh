#!/usr/bin/env bash
# Theano-PyMC 1.0.5's own GPU tests on the H200 through `envforge verify --suite`, from an
# offline bundle made with --with-envforge --with-suite (docs/gpu/suite.md). One verify run
# gives the suite's verdict and the probe's rows (scan, GEMM resident and with copies, the
# cuBLAS ratio). SPEC may name another spec of the bundle with Theano-PyMC 1.0.5 (Keras's).
# Results to $OUT: suite.json, suite.md, pytest's own JUnit XML and log, the GPU's memory in
# use while it ran, the host.
set -u
OUT=${OUT:-/tmp/envforge-gpu}
mkdir -p "$OUT"
BUNDLE=${BUNDLE:-.bundle/gpu}
# the bundle's copy of the spec: its lock records the built wheel
SPEC=${SPEC:-$BUNDLE/specs/theano-gpu-linux.toml}
export ENVFORGE_HOME=/tmp/envforge-home PYTHONUNBUFFERED=1 COLUMNS=160
{ nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv
  python3 --version; nproc; } > "$OUT/host.txt" 2>&1
python3 -m venv /tmp/ev && /tmp/ev/bin/python -m pip install -q --no-index \
  --find-links "$BUNDLE/envforge-wheels" envforge || exit 1
EF=/tmp/ev/bin/envforge
$EF apply "$SPEC" --bundle "$BUNDLE" --yes --quiet || exit 1
# The GPU's memory while the workers share it (gpuarray.preallocate=0 for the suite).
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 5 \
  > "$OUT/gpu-mem.csv" 2>&1 &
smi=$!
t0=$SECONDS
# The device machine allows 10 minutes a call: SUITE_TIME_LIMIT bounds the run below that
# (what ran by then is counted, and verify fails saying the bound was reached).
$EF verify "$SPEC" --suite --bundle "$BUNDLE" ${SUITE_TIME_LIMIT:+--suite-time-limit "$SUITE_TIME_LIMIT"} \
  ${SUITE_WORKERS:+--suite-workers "$SUITE_WORKERS"} --report "$OUT/suite.md" --json \
  > "$OUT/suite.json" 2> "$OUT/suite.err"
echo "verify --suite: exit $? in $((SECONDS - t0)) s"
kill "$smi"
run=$(dirname "$(find "$ENVFORGE_HOME/cache/suite/runs" -name pytest-junit.xml | head -1)")
cp "$run/pytest-junit.xml" "$run/pytest.log" "$OUT/" 2>/dev/null
tail -3 "$OUT/suite.err"
python3 - "$OUT/suite.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d.get("suite") or {}
print({k: s.get(k) for k in ("subset", "passed", "failed", "known_bad", "skipped", "seconds", "workers", "problem")})
for f in (s.get("failures") or [])[:60]:
    print("FAILED", f["test"], "|", (f["message"] or "")[:300].replace("\n", " "))
for k in s.get("known_bad_tests") or []:
    print("KNOWN-BAD", k["rule"], len(k["tests"]), "tests")
print("known-bad rows' tests that passed:", s.get("known_bad_passed"))
for r in d["rows"]:
    if r["name"] in ("kernel.scan.implementation", "gpu.gemm.cublas_ratio", "gpu.speedup") or r["status"] == "fail":
        print("ROW", r["name"], r["status"], "|", r["found"][:200], "|", r["why"][:200])
PY

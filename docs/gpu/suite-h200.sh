#!/usr/bin/env bash
# Theano-PyMC 1.0.5's own GPU tests on the H200 through `envforge verify --suite`, from an
# offline bundle made with --with-envforge --with-suite (docs/gpu/suite.md). Results to $OUT.
set -u
OUT=${OUT:-/tmp/envforge-gpu}
mkdir -p "$OUT"
BUNDLE=.bundle/gpu
SPEC=$BUNDLE/specs/theano-gpu-linux.toml
export ENVFORGE_HOME=/tmp/envforge-home PYTHONUNBUFFERED=1 COLUMNS=160
python3 -m venv /tmp/ev && /tmp/ev/bin/python -m pip install -q --no-index \
  --find-links "$BUNDLE/envforge-wheels" envforge || exit 1
EF=/tmp/ev/bin/envforge
$EF apply "$SPEC" --bundle "$BUNDLE" --yes --quiet || exit 1
t0=$SECONDS
# The device machine allows 10 minutes a call: the run is bounded below that, and what ran
# by then is counted (verify then fails, saying the bound was reached).
$EF verify "$SPEC" --suite --bundle "$BUNDLE" --suite-time-limit "${SUITE_TIME_LIMIT:-1200}" \
  ${SUITE_WORKERS:+--suite-workers "$SUITE_WORKERS"} --json > "$OUT/suite.json" 2> "$OUT/suite.err"
echo "verify --suite: exit $? in $((SECONDS - t0)) s"
python3 - "$OUT/suite.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d.get("suite") or {}
print({k: s.get(k) for k in ("subset", "passed", "failed", "known_bad", "skipped", "seconds", "workers", "problem")})
for f in (s.get("failures") or [])[:40]:
    print("FAILED", f["test"], "|", (f["message"] or "")[:300].replace("\n", " "))
for k in s.get("known_bad_tests") or []:
    print("KNOWN-BAD", k["rule"], len(k["tests"]), "tests")
print("known-bad rows that did not fail:", s.get("known_bad_passed"))
PY

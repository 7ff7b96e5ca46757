#!/usr/bin/env bash
# After docs/gpu/run-h200.sh, on the same GPU host and bundle: the saved plan (plan -o, apply FILE,
# the same plan refused once the host has moved on), verify, status, rollback.
set -u
OUT=${OUT:-/tmp/envforge-gpu}; mkdir -p "$OUT/extra"; X=$OUT/extra
BUNDLE=.bundle/gpu; SPEC=$BUNDLE/specs/theano-gpu-linux.toml
export ENVFORGE_HOME=/tmp/envforge-home PYTHONUNBUFFERED=1 COLUMNS=160
EF=/tmp/ev/bin/envforge
$EF --version > "$X/version.txt" 2>&1
$EF plan "$SPEC" --bundle "$BUNDLE" -o /tmp/plan.json > "$X/plan-o.txt" 2>&1; echo "plan -o exit $?" >> "$X/summary.txt"
$EF apply /tmp/plan.json --yes > "$X/apply-file.txt" 2>&1; echo "apply FILE exit $?" >> "$X/summary.txt"
$EF apply /tmp/plan.json --yes > "$X/apply-file-again.txt" 2>&1; echo "apply FILE again (stale: env now applied) exit $?" >> "$X/summary.txt"
$EF verify "$SPEC" --json > "$X/verify.json" 2> "$X/verify.err"; echo "verify exit $?" >> "$X/summary.txt"
$EF status --json > "$X/status.json" 2>&1; echo "status exit $?" >> "$X/summary.txt"
$EF rollback "$SPEC" > "$X/rollback.txt" 2>&1; echo "rollback exit $?" >> "$X/summary.txt"
cp /tmp/plan.json "$X/plan.json" 2>/dev/null
tar czf /tmp/extra.tgz -C "$OUT" extra && rm -rf "$X" && mv /tmp/extra.tgz "$OUT/"

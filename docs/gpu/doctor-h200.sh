#!/usr/bin/env bash
# envforge doctor on the GPU host: the bare host, then the spec before and after apply, then
# the blog's .theanorc fixed and undone. Needs the bundle of run-h200.sh at .bundle/gpu.
set -u
OUT=${OUT:-/tmp/envforge-doctor}
mkdir -p "$OUT"
export ENVFORGE_HOME=/tmp/envforge-home PYTHONUNBUFFERED=1 COLUMNS=160
SPEC=specs/theano-gpu-linux.toml
python3 -m venv /tmp/ev && /tmp/ev/bin/python -m pip install -q --no-index \
  --find-links .bundle/gpu/envforge-wheels envforge || exit 1
EF=/tmp/ev/bin/envforge
$EF doctor --report "$OUT/doctor-host.md" > "$OUT/doctor-host.txt" 2>&1; echo "host: exit $?"
$EF doctor "$SPEC" --report "$OUT/doctor-before.md" > /dev/null 2>&1; echo "before: exit $?"
$EF apply "$SPEC" --bundle .bundle/gpu --yes -q
$EF doctor "$SPEC" --report "$OUT/doctor-after.md" > /dev/null 2>&1; echo "after: exit $?"
printf '[global]\ndevice = gpu\nfloatX = float32\n\n[lib]\ncnmem = 0.8\n\n[cudnn]\nenable = true\n' \
  > ~/.theanorc
cp ~/.theanorc /tmp/blog-theanorc
$EF doctor --report "$OUT/doctor-blog.md" > /dev/null 2>&1; echo "blog: exit $?"
$EF doctor --fix --yes > "$OUT/doctor-fix.txt" 2>&1; echo "fix: exit $?"
cp ~/.theanorc "$OUT/theanorc-fixed"
$EF doctor --undo > /dev/null 2>&1
cmp ~/.theanorc /tmp/blog-theanorc && echo "undo: .theanorc restored byte for byte"
rm ~/.theanorc
$EF rollback "$SPEC" -q

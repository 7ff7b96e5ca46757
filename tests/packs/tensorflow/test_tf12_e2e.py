"""TensorFlow before 1.13 for real: specs/tf12-py36-cpu.toml (allenai/bilm-tf's TensorFlow
1.2.1, on pyenv's Python 3.6) applied and verified. That TensorFlow has no ``tf.compat.v1``,
which the probe's kernels called (every kernel row failed with ``module
'tensorflow.python.util.compat' has no attribute 'v1'``); they use the top level there."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.cli import main
from envforge.errors import EnvforgeError
from envforge.host.interpreters import find_interpreter
from tests.packs.conftest import verify_json

REPO = Path(__file__).resolve().parents[3]
SPEC = REPO / "specs" / "tf12-py36-cpu.toml"

pytestmark = [pytest.mark.slow, pytest.mark.network,
              pytest.mark.posix_only("applies pyenv's Linux Python 3.6")]


def test_tensorflow_1_2_kernels_pass_on_python_3_6(host: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    try:
        find_interpreter("3.6")
    except EnvforgeError as exc:
        pytest.skip(f"needs a Python 3.6 on this host (pyenv install 3.6): {exc}")
    prefix = tmp_path / "envs" / "tf12"
    assert main(["apply", str(SPEC), "--yes", "--quiet", "--prefix", str(prefix)]) == 0
    code, document = verify_json(SPEC, prefix, capsys)
    rows = {row["name"]: row for row in document["rows"]}
    assert code == 0, [r for r in document["rows"] if r["status"] == "fail"]
    assert rows["version.tensorflow"]["found"] == "1.2.1"
    assert rows["version.python"]["found"].startswith("3.6.")
    assert {f"kernel.{k}.samples" for k in ("elementwise", "gemm", "conv")} <= {
        name for name, row in rows.items() if row["status"] == "pass"}
    assert main(["rollback", str(SPEC), "--prefix", str(prefix)]) == 0

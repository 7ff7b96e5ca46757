"""init's draft, offline (no index queries): the back-end a mounted framework needs is added
only where no requirement mounts one."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from envforge.app.drafting import draft_spec


def _requirements(tmp_path: Path, text: str) -> tuple[str, ...]:
    (tmp_path / "requirements.txt").write_text(text)
    draft = draft_spec(tmp_path, source=str(tmp_path), name="r", platform="linux-64",
                       lookup=None, commit_day=date(2018, 9, 9))
    return tuple(f.requirement for f in draft.repository.imported.requirements)


def test_keras_alone_gets_tensorflow_1x_and_python_3_7_at_most(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("Keras==2.2.4\nnumpy\n")
    draft = draft_spec(tmp_path, source=str(tmp_path), name="r", platform="linux-64",
                       lookup=None, commit_day=date(2018, 9, 9))
    added = draft.repository.imported.requirements[-1]
    assert (added.requirement, added.origin, added.mapped) == (
        "tensorflow<2", "requirements.txt:1", True)
    assert draft.python.value is not None and draft.python.value.startswith("3.7")


@pytest.mark.parametrize("text", [
    "Keras==2.0.9\ntensorflow-gpu==1.4.0\n",  # the GPU build names the back-end
    "keras==2.1.6\nTheano==1.0.4\n",  # Theano mounts: backend = "theano"
    "keras==2.4.3\n",  # past multi-back-end Keras: no [keras] section, nothing to add
    "keras==2.3.1\ntensorflow>=2.0\n",  # TensorFlow 2 mounts no [tensorflow]: it is named
    "torch==1.4.0\n",  # a framework with no back-end key
])
def test_nothing_is_added_where_the_back_end_is_named_or_none_is_needed(
        tmp_path: Path, text: str) -> None:
    assert not any(r.startswith("tensorflow<2") for r in _requirements(tmp_path, text))

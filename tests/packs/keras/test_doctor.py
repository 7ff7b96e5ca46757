"""Doctor's Keras rule against an environment as pip leaves it: h5py 3 next to Keras 2.3."""

from __future__ import annotations

from pathlib import Path

from tests.doctor.layouts import expected, home, ids, judge, look, only, venv


def test_h5py_3_next_to_keras_2_3(tmp_path: Path) -> None:
    prefix = venv(tmp_path / "env", {"keras": "2.3.1", "h5py": "3.1.0", "numpy": "1.18.5"})
    env = {"HOME": str(home(tmp_path)), "VIRTUAL_ENV": str(prefix), "PATH": ""}
    finding = only(judge(look(tmp_path, env)), "keras.keras2-h5py3")
    assert finding.severity == "error"
    assert "keras 2.3.1 with h5py 3.1.0" in finding.title
    assert "'str' object has no attribute 'decode'" in finding.title
    (prefix / "lib" / "python3.7" / "site-packages" / "h5py-3.1.0.dist-info").rename(
        prefix / "lib" / "python3.7" / "site-packages" / "h5py-2.10.0.dist-info")
    assert "keras.keras2-h5py3" not in ids(judge(look(tmp_path, env)))


def test_keras_2_4_next_to_tensorflow_gpu_1_15(tmp_path: Path) -> None:
    """tensorflow-gpu is TensorFlow to the pitfall: Keras 2.4 cannot import on it."""
    prefix = venv(tmp_path / "env", {"keras": "2.4.3", "tensorflow-gpu": "1.15.5",
                                     "h5py": "2.10.0"})
    env = {"HOME": str(home(tmp_path)), "VIRTUAL_ENV": str(prefix), "PATH": ""}
    finding = only(judge(look(tmp_path, env)), "keras.keras24-tf1")
    assert "keras 2.4.3 with tensorflow 1.15.5" in finding.title
    assert "Keras requires TensorFlow 2.2 or higher" in finding.title


def _keras_home(tmp_path: Path, config: str) -> Path:
    folder = tmp_path / "home" / ".keras"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "keras.json").write_text(config)
    return folder


def test_keras_backend_overrides_keras_json(tmp_path: Path) -> None:
    _keras_home(tmp_path, '{"backend": "tensorflow", "floatx": "float32"}')
    env = {"HOME": str(tmp_path / "home"), "PATH": "", "KERAS_BACKEND": "theano"}
    finding = only(judge(look(tmp_path, env)), "keras.backend-overridden")
    assert "KERAS_BACKEND=theano overrides" in finding.title
    assert "Using Theano backend." in finding.title
    env["KERAS_BACKEND"] = "tensorflow"
    assert "keras.backend-overridden" not in ids(judge(look(tmp_path, env)))


def test_keras_home_is_where_keras_looks(tmp_path: Path) -> None:
    _keras_home(tmp_path, '{"backend": "tensorflow"}')
    elsewhere = tmp_path / "env" / "keras"
    elsewhere.mkdir(parents=True)
    (elsewhere / "keras.json").write_text('{"backend": "theano"}')
    env = {"HOME": str(tmp_path / "home"), "PATH": "", "KERAS_BACKEND": "theano",
           "KERAS_HOME": str(elsewhere)}
    assert "keras.backend-overridden" not in ids(judge(look(tmp_path, env)))


def test_an_unreadable_keras_json(tmp_path: Path) -> None:
    _keras_home(tmp_path, '{"backend": "theano",}')
    env = {"HOME": str(tmp_path / "home"), "PATH": ""}
    finding = only(judge(look(tmp_path, env)), "keras.json-unreadable")
    assert "Keras 2.x ignores it" in finding.title


def test_the_backend_keras_will_pick_against_the_lock(tmp_path: Path) -> None:
    lock = expected(spec="specs/tf1-keras-cpu.toml", env_kind="venv", cuda=None, cudnn=None,
                    device="cpu", versions={"python": "3.7", "keras": "2.3.1"},
                    settings={"keras": {"backend": "tensorflow", "floatx": "float32"}})
    env = {"HOME": str(tmp_path / "home"), "PATH": ""}
    (tmp_path / "home").mkdir()
    assert "keras.backend-not-locked" not in ids(judge(look(tmp_path, env), lock))  # default
    _keras_home(tmp_path, '{"backend": "theano"}')
    finding = only(judge(look(tmp_path, env), lock), "keras.backend-not-locked")
    assert finding.title.startswith("Keras will run on theano (") and "lock says tensorflow" \
        in finding.title
    env["KERAS_BACKEND"] = "tensorflow"
    assert "keras.backend-not-locked" not in ids(judge(look(tmp_path, env), lock))

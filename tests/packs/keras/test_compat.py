"""Keras's pitfalls refused at lock time, and a back-end the spec does not mount."""

from __future__ import annotations

from pathlib import Path

import pytest

from envforge.compat import check_platform_spec
from envforge.errors import CompatibilityError
from envforge.lockfile import load_lock
from envforge.packs.keras.expect import expectations
from envforge.spec import load_spec, parse_spec
from tests.testing.packs import REGISTRY

REPO = Path(__file__).resolve().parents[3]
CPU = (REPO / "specs" / "tf1-keras-cpu.toml").read_text(encoding="utf-8")
THEANO = (REPO / "specs" / "keras-theano-cpu.toml").read_text(encoding="utf-8")


def _conflicts(text: str) -> list[tuple[str, str, str]]:
    pspec = parse_spec(text, source="t.toml", registry=REGISTRY).for_platform("win-64")
    return [(c.rule, c.message, c.fix) for c in check_platform_spec(pspec, REGISTRY)]


@pytest.mark.parametrize("text", [CPU, THEANO])
def test_h5py_3_with_keras_2_3_is_refused(text: str) -> None:
    """(TensorFlow 1.15's tf.keras is refused beside it, by the TensorFlow pack's row.)"""
    conflicts = {rule: (message, fix) for rule, message, fix in
                 _conflicts(text.replace('"h5py<3"', '"h5py>=3"'))}
    assert set(conflicts) == {"keras2-h5py3", *(["tf-keras-h5py3"] if text == CPU else [])}
    message, fix = conflicts["keras2-h5py3"]
    assert message.startswith("pypi keras==2.3.1 with pypi h5py>=3:")
    assert "AttributeError: 'str' object has no attribute 'decode'" in message
    assert fix.startswith('pin "h5py<3"')  # modules.toml's bound


def test_a_backend_the_spec_does_not_mount() -> None:
    text = CPU.replace('backend = "tensorflow"', 'backend = "theano"')
    [(rule, message, _)] = _conflicts(text)
    assert rule == "keras-backend" and "no [theano] section" in message


def test_a_resolved_h5py_3_is_refused() -> None:
    pspec = load_spec(REPO / "specs" / "keras-theano-cpu.toml", REGISTRY).for_platform("linux-64")
    versions = dict(load_lock(REPO / "locks" / "keras-theano-cpu.lock", REGISTRY)
                    .platforms["linux-64"].expect.versions)
    assert expectations(pspec, versions).backend == "theano"
    with pytest.raises(CompatibilityError, match=r"resolved keras 2\.3\.1 with h5py 3\.8\.0"):
        expectations(pspec, {**versions, "h5py": "3.8.0"})


@pytest.mark.parametrize(("keras", "rule", "seen"), [
    ("2.4.3", "keras24-tf1", "ImportError: Keras requires TensorFlow 2.2 or higher."),
    ("2.5.0rc0", "keras25-tf1", "cannot import name 'get_config' from "
                                "'tensorflow.python.eager.context'"),
    ("2.9.0", "keras25-tf1", "cannot import name 'get_config'"),
    ("2.10.0", "keras210-tf1", "module 'tensorflow._api.v1.compat.v2' has no attribute "
                               "'__internal__'"),
])
def test_keras_2_4_and_later_on_tensorflow_1_is_refused(keras: str, rule: str,
                                                         seen: str) -> None:
    """Keras 2.4+ is tf.keras: `import keras` fails on TensorFlow 1.15.5, each range with the
    error it printed here."""
    [(found, message, fix)] = _conflicts(CPU.replace("keras==2.3.1", f"keras=={keras}"))
    assert found == rule
    assert message.startswith(f"pypi tensorflow==1.15.5 with pypi keras=={keras}:") or \
        message.startswith(f"pypi keras=={keras} with pypi tensorflow==1.15.5:")
    assert seen in message and fix.startswith('pin "keras<2.4"')


def test_tensorflow_gpu_counts_as_tensorflow() -> None:
    text = CPU.replace("tensorflow==1.15.5", "tensorflow-gpu==1.15.5").replace(
        "keras==2.3.1", "keras==2.11.0")
    assert [rule for rule, _, _ in _conflicts(text)] == ["keras210-tf1"]


def test_a_resolved_keras_2_4_is_refused() -> None:
    pspec = load_spec(REPO / "specs" / "tf1-keras-cpu.toml", REGISTRY).for_platform("linux-64")
    versions = dict(load_lock(REPO / "locks" / "tf1-keras-cpu.lock", REGISTRY)
                    .platforms["linux-64"].expect.versions)
    with pytest.raises(CompatibilityError, match=r"resolved keras 2\.4\.3 with tensorflow "
                                                 r"1\.15\.5: .*Keras requires TensorFlow 2\.2"):
        expectations(pspec, {**versions, "keras": "2.4.3"})


OLD = (REPO / "specs" / "tf113-keras21-cpu.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize("keras", ["2.1.6", "2.0.8", "2.1.6,<2.2"])
def test_keras_json_in_the_environment_needs_keras_2_2(keras: str) -> None:
    """Keras before 2.2 knows no KERAS_HOME: keras.json in the environment would never be read
    (and Keras would write its defaults into the user's home)."""
    text = OLD.replace('keras_json = "home"', 'keras_json = "env"').replace(
        "keras==2.1.6", f"keras=={keras}")
    [(rule, message, fix)] = _conflicts(text)
    assert rule == "keras-home"
    assert message.startswith(f'pypi keras=={keras} with [keras] keras_json = "env"')
    assert "2.2.0 added KERAS_HOME" in message
    assert fix.startswith('set [keras] keras_json = "home"')


@pytest.mark.parametrize("text", [
    OLD,  # keras.json in ~/.keras: read by every Keras 2.x
    OLD.replace('keras_json = "home"', 'keras_json = "env"').replace("keras==2.1.6",
                                                                       "keras==2.2.4"),
    OLD.replace('keras_json = "home"', 'keras_json = "env"').replace("keras==2.1.6",
                                                                       "keras>=2.1"),
])
def test_keras_json_where_keras_reads_it(text: str) -> None:
    assert _conflicts(text) == []


def test_a_resolved_keras_2_1_with_keras_json_in_the_environment_is_refused() -> None:
    text = OLD.replace('keras_json = "home"', 'keras_json = "env"').replace(
        "keras==2.1.6", "keras<2.3")
    pspec = parse_spec(text, source="t.toml", registry=REGISTRY).for_platform("linux-64")
    versions = dict(load_lock(REPO / "locks" / "tf113-keras21-cpu.lock", REGISTRY)
                    .platforms["linux-64"].expect.versions)
    assert versions["keras"] == "2.1.6"
    with pytest.raises(CompatibilityError, match=r'resolved keras 2\.1\.6 with \[keras\] '
                                                 r'keras_json = "env"'):
        expectations(pspec, versions)
    home = load_spec(REPO / "specs" / "tf113-keras21-cpu.toml", REGISTRY).for_platform("linux-64")
    assert expectations(home, versions).keras_json == "~/.keras/keras.json"


def test_lock_refuses_keras_2_4_on_tensorflow_1_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 before anything is resolved: the spec's file:line, what `import keras` prints,
    the fix; no lock written."""
    from envforge.cli import main

    spec = tmp_path / "specs" / "tf1-keras24.toml"
    spec.parent.mkdir()
    spec.write_text(CPU.replace("keras==2.3.1", "keras==2.4.3"), encoding="utf-8")
    capsys.readouterr()
    assert main(["lock", str(spec)]) == 2
    error = capsys.readouterr().err.strip()
    line = next(n for n, row in enumerate(CPU.splitlines(), 1) if row.startswith("packages"))
    assert "\n" not in error
    assert f"{spec}:{line}: pypi.packages: " in error
    assert "Keras requires TensorFlow 2.2 or higher" in error
    assert 'fix: pin "keras<2.4"' in error and "keras-team/keras/releases/tag/2.4.0" in error
    assert not (tmp_path / "locks").exists()


@pytest.mark.parametrize(("versions", "capped"), [
    ({"keras": "2.3.1"}, True), ({"keras": "2.2.4", "h5py": "3.8.0"}, True),
    ({"keras": "2.4.3"}, False), ({"h5py": "3.8.0"}, False)])
def test_multi_backend_keras_gets_h5py_below_3(versions: dict[str, str], capped: bool) -> None:
    """Keras before 2.4 decodes an .h5 file's strings as bytes and requires h5py unbounded:
    lock adds h5py<3 beside it (a spec without the pin had been refused at lock, after
    resolving, with the fix to write it)."""
    from tests.testing.packs import REGISTRY

    rows = REGISTRY.get("keras").undeclared_imports(versions)
    assert [row.requirement for row in rows] == (["h5py<3"] if capped else [])

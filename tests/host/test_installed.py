"""What an environment holds, read from its metadata: conda-meta, pyvenv.cfg, dist-info."""

from __future__ import annotations

import json
from pathlib import Path

from envforge.host.installed import conda_records, installed_records


def test_conda_records_in_name_order_unreadable_ones_skipped(tmp_path: Path) -> None:
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    (meta / "zlib-1.2.13-0.json").write_text(json.dumps(
        {"name": "zlib", "version": "1.2.13", "sha256": "ab" * 32}))
    (meta / "numpy-1.19.5-0.json").write_text(json.dumps({"name": "numpy", "version": "1.19.5"}))
    (meta / "broken.json").write_text("{")
    (meta / "history").write_text("")
    found = [(r.name, r.version, r.sha256) for r in conda_records(tmp_path)]
    assert found == [("numpy", "1.19.5", ""), ("zlib", "1.2.13", "ab" * 32)]
    assert list(conda_records(tmp_path / "absent")) == []


def test_a_venv_s_python_and_distributions(tmp_path: Path) -> None:
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.7.16\n")
    site = tmp_path / "lib" / "python3.7" / "site-packages"
    site.mkdir(parents=True)
    (site / "numpy-1.19.5.dist-info").mkdir()
    (site / "Theano_PyMC-1.0.5-py3.7.egg-info").mkdir()
    names = [(name, version) for name, version, _ in installed_records(tmp_path)]
    assert names == [("python", "3.7.16"), ("Theano_PyMC", "1.0.5"), ("numpy", "1.19.5"),
                     ("python", "3.7")]

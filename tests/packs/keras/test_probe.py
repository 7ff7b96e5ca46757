"""The Keras probe runs on Keras 2.0-2.3 under Python 3.5-3.7: its source is Python 3.5, and
SGD gets its rate by the keyword each Keras spells (the signatures as Keras's sources write
them). The probe on real Keras 2.1.6/2.2.4/2.3.1: tests/packs/test_old_keras_e2e.py and
test_tf_keras_e2e.py."""

from __future__ import annotations

import ast
from types import ModuleType
from typing import Any

from envforge.packs.keras import PROBE_SCRIPT
from tests.testing.probes import load_probe


def _probe() -> ModuleType:
    return load_probe(PROBE_SCRIPT)


def test_the_probe_is_python_3_5() -> None:
    ast.parse(PROBE_SCRIPT.read_text(encoding="utf-8"), feature_version=(3, 5))


class _Sgd22:
    """keras/optimizers.py at 2.2.4: ``lr`` only, any other keyword refused."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.0, decay: float = 0.0,
                 nesterov: bool = False, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"Unexpected keyword argument passed to optimizer: {min(kwargs)}")
        self.rate = lr


class _Sgd23:
    """keras/optimizers.py at 2.3.1: ``learning_rate``, ``lr`` still read from kwargs."""

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0,
                 nesterov: bool = False, **kwargs: Any) -> None:
        self.rate = kwargs.pop("lr", learning_rate)


def test_sgd_gets_its_rate_by_the_keyword_each_keras_spells() -> None:
    sgd = _probe()._sgd
    assert sgd(_Sgd22, 0.5).rate == 0.5
    assert sgd(_Sgd23, 0.5).rate == 0.5

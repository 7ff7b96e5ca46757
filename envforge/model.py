"""The base every layer may use: the frozen model base and the platform names.

It sits below host/ (host imports nothing above it), so a host module that names a platform
or defines a model needs neither the spec nor the lock. Code outside this layer keeps
importing them from ``envforge.spec`` as before.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Platform = Literal["win-64", "linux-64"]
PLATFORMS: tuple[Platform, ...] = ("win-64", "linux-64")


class Frozen(BaseModel):
    """Immutable, strict base for every model envforge reads or writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

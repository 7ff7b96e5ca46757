"""The base every layer may use: the frozen model base.

It sits below host/ (host imports nothing above it), so a host module may define or read a
model without the spec. Code outside this layer keeps importing it from ``envforge.spec``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable, strict base for every model envforge reads or writes."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

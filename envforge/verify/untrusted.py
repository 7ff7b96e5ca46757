"""Reading a probe report defensively: it comes from another interpreter and possibly a
half-broken environment, so a missing or malformed field reads as empty, never raises."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.12g}"
    return str(value)


def _clip(text: str, limit: int = 800) -> str:
    """A compiler error quotes whole graphs; a row keeps the start and the end."""
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]} ... {text[-limit // 2:]}"

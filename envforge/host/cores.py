"""How many CPUs this process may run on: what its thread pools of CPU or kernel work are
sized by (more threads than cores only trade the GIL back and forth)."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity where the host says, a container's
    share), else the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1

"""Work started now and collected later, so network waits overlap.

A one-worker pool per call, shut down without waiting: the worker ends once its one task is
done, and (unlike a daemon thread) the interpreter joins it at exit, so a caller that fails
early never exits with the work frozen mid-call (a daemon left inside OpenBLAS once hung
``envforge lock`` at exit).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from envforge.platforms import threads_have_own_priority

P = ParamSpec("P")
T = TypeVar("T")

# Added to the nice value of work beside the critical path, as ``nice -n 10`` adds it:
# relative, so work already niced is never raised.
YIELDING_NICE = 10


def in_background(name: str, fn: Callable[P, T], /, *args: P.args,
                  **kwargs: P.kwargs) -> Future[T]:
    """``fn(*args, **kwargs)`` in a thread named ``envforge-NAME``; ``result()`` waits for
    it and raises what it raised."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"envforge-{name}")
    try:
        return pool.submit(fn, *args, **kwargs)
    finally:
        pool.shutdown(wait=False)


def yielding(fn: Callable[P, T]) -> Callable[P, T]:
    """``fn`` run at a lower CPU priority, for ``in_background`` work beside the critical
    path (lock's Debian index beside uv's runs): uv's builds get the CPU first, and this work
    takes what they leave. A process it starts inherits the priority. Only for short work:
    a nice value yields to every process on the machine, not only to envforge's own, so
    under outside load the work starves while the lock waits for it (the kernels'
    references child and the suite's runner, tried: a cold bullseye lock beside four busy
    loops took 235-242 s instead of 32-37 s: bench/results/lock-under-load.md). On Linux a
    thread has a nice value of its own (and ``in_background``'s worker ends with its one
    task); elsewhere a priority is the whole process's, and ``fn`` runs as it is."""

    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        if threads_have_own_priority():
            with contextlib.suppress(OSError):  # a priority refused costs only the yield
                me = threading.get_native_id()
                os.setpriority(os.PRIO_PROCESS, me,
                               min(19, os.getpriority(os.PRIO_PROCESS, me) + YIELDING_NICE))
        return fn(*args, **kwargs)

    return run

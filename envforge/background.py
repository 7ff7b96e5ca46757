"""Work started now and collected later, so network waits overlap.

A one-worker pool per call, shut down without waiting: the worker ends once its one task is
done, and (unlike a daemon thread) the interpreter joins it at exit, so a caller that fails
early never exits with the work frozen mid-call (a daemon left inside OpenBLAS once hung
``envforge lock`` at exit).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def in_background(name: str, fn: Callable[P, T], /, *args: P.args,
                  **kwargs: P.kwargs) -> Future[T]:
    """``fn(*args, **kwargs)`` in a thread named ``envforge-NAME``; ``result()`` waits for
    it and raises what it raised."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"envforge-{name}")
    try:
        return pool.submit(fn, *args, **kwargs)
    finally:
        pool.shutdown(wait=False)

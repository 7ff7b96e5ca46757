"""make test's scheduler: xdist's ``loadfile`` (a file's tests on one worker, so its module
fixtures are made once), changed where a few long tests decide the run's length on 2 cores.

An xdist worker starts a test only once it holds the next one (pytest's ``nextitem``), so a
worker is given its next unit (a whole file) while its last test still waits. ``loadfile``
gives it when two tests are left: a file then waited behind a 5-minute test on a busy
worker while another worker sat idle. Here a worker gets its next unit only when it holds
one test, and behind a long file's test (``long``) it gets the queue's last unit (the
quick files: the collection runs the longest first), not the next long file. The files in
``split`` share no module fixture: each of their tests is a unit of its own.
"""

from __future__ import annotations

from collections.abc import Collection

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController


class FreeWorkerScheduling(LoadFileScheduling):
    def __init__(self, config: pytest.Config, log: Producer, *, long: Collection[str],
                 split: Collection[str]) -> None:
        super().__init__(config, log)
        self._long, self._split = frozenset(long), frozenset(split)

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return nodeid if path in self._split else path

    def _pending(self, node: WorkerController) -> list[str]:
        return [nodeid for unit in self.assigned_work.get(node, {}).values()
                for nodeid, done in unit.items() if not done]

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if len(self._pending(node)) <= 1:  # its last test waits for a next one
            self._assign_work_unit(node)

    def _assign_work_unit(self, node: WorkerController) -> None:
        pending = self._pending(node)
        behind_long = bool(pending) and pending[0].split("::", 1)[0] in self._long
        scope, work_unit = self.workqueue.popitem(last=behind_long)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid)
                                for nodeid, done in work_unit.items() if not done])

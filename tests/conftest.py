"""Fixtures for resolver tests (a local conda channel of real packages, built once per session)
and the run's shared envforge cache; the order files start in (the longest first); and the
Windows lane's rules: ``posix_only`` tests are skipped there, with their reason, and counted
apart."""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from envforge.packapi import Registry
from envforge.packs import FrameworkPack
from tests.testing.conda_channel import serve, shared_channel
from tests.testing.packs import REGISTRY
from tests.testing.testcache import hold, kept_cache
from tests.testing.winespawn import retry_spawns

if sys.platform == "win32":
    retry_spawns()


@pytest.fixture(scope="session")
def conda_channel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built channel's folder (read-only by convention: copy it to tamper)."""
    return shared_channel(tmp_path_factory)


def pytest_configure(config: pytest.Config) -> None:
    """The run (the xdist controller, not each worker) holds the kept cache's shared lock,
    emptying it first when it is due (tests/testing/testcache.py)."""
    cache = kept_cache()
    if cache is not None and not os.environ.get("PYTEST_XDIST_WORKER"):
        config.stash[_KEPT_LOCK] = hold(cache)


def pytest_unconfigure(config: pytest.Config) -> None:
    held = config.stash.get(_KEPT_LOCK, None)
    if held is not None:
        held.close()  # the run's shared lock: another run may empty the cache once all end


_KEPT_LOCK = pytest.StashKey[IO[bytes]]()


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One envforge cache for the run, every xdist worker's included, for tests that apply or
    verify a real environment but test neither a cold nor a damaged cache: each wheel, deb,
    index, kernel reference and Theano compiled module is made once, not once per test, and
    kept for the next run (tests/testing/testcache.py; ENVFORGE_TEST_CACHE=off: this run's
    own). envforge's cache is made to be shared (a file lock per download, every entry
    written whole by rename); ``home_sharing`` links a home's ``cache`` to it."""
    kept = kept_cache()
    if kept is not None:  # made by pytest_configure's hold
        return kept
    base = tmp_path_factory.getbasetemp()
    cache = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-cache"
    cache.mkdir(exist_ok=True)
    return cache


@pytest.fixture(scope="session", autouse=True)
def _envforge_home_of_the_run(tmp_path_factory: pytest.TempPathFactory,
                              shared_cache: Path) -> Iterator[None]:
    """A test that names no ENVFORGE_HOME gets the run's, shared by every xdist worker, its
    cache the shared one, never the user's own folders: those held 2 GB of test runs'
    downloads, and a test's time hung on what earlier runs had left there. A caller's own
    ENVFORGE_HOME is kept."""
    if os.environ.get("ENVFORGE_HOME"):
        yield
        return
    base = tmp_path_factory.getbasetemp()
    home = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "envforge-home"
    home.mkdir(exist_ok=True)
    # its data and state stay the run's; FileExistsError: another worker linked it first
    with contextlib.suppress(FileExistsError):
        (home / "cache").symlink_to(shared_cache, target_is_directory=True)
    os.environ["ENVFORGE_HOME"] = str(home)
    try:
        yield
    finally:
        os.environ.pop("ENVFORGE_HOME", None)


@pytest.fixture(scope="session")
def conda_channel_http(conda_channel: Path) -> Iterator[str]:
    """The same channel served over HTTP on localhost."""
    with serve(conda_channel) as url:
        yield url


@pytest.fixture(scope="session")
def registry() -> Registry[FrameworkPack]:
    """The built-in packs as the app layer loads them: what a test hands the core."""
    return REGISTRY


POSIX_ONLY = "POSIX-only: "


E2E = "tests/windows/test_wine_e2e.py"  # envforge's Windows steps for real, under Wine


CONDA_CHANNEL = "its conda channel is built by rattler-build running bash build scripts"


# Started first under xdist (make test: --dist loadfile --no-loadscope-reorder), longest
# first as measured in make test: a long file started last kept the whole run waiting on it
# (xdist's own order, by count of tests, started these last). Then every other file with a
# slow test, then the rest; each file's tests keep their order.
LONGEST_FIRST = (
    "tests/importers/test_real_runs.py",
    "tests/test_bundle.py",
    "tests/importers/test_corpus.py",
    "tests/suite/test_suite_run.py",
    "tests/packs/theano/test_compilecache_e2e.py",
    "tests/test_keras_gpu_spec.py",
    "tests/bundle/test_selfcheck.py",
    "tests/packs/test_tf_keras_e2e.py",
    "tests/commands/test_verify_cmd.py",
    "tests/commands/test_lock.py",
    "tests/faults/test_lock_exit.py",
    "tests/packs/test_torch_e2e.py",
    "tests/test_gpu_spec.py",
    "tests/packs/test_old_keras_e2e.py",
    "tests/packs/theano/test_probe.py",
    "tests/commands/test_init.py",
)


# Their tests share no module fixture, and one of them alone is most of a worker's run:
# under make test each test is a unit of its own (tests/testing/schedule.py).
SPLIT_PER_TEST = ("tests/importers/test_real_runs.py",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """make test's ``--dist loadfile``, with a free worker taking the next file."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.testing.schedule import FreeWorkerScheduling

    return FreeWorkerScheduling(config, log, long=LONGEST_FIRST, split=SPLIT_PER_TEST)


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow = {_file(item) for item in items if item.get_closest_marker("slow") is not None}

    def start_rank(item: pytest.Item) -> int:
        path = _file(item)
        if path in LONGEST_FIRST:
            return LONGEST_FIRST.index(path)
        return len(LONGEST_FIRST) + (path not in slow)

    items.sort(key=start_rank)
    if sys.platform != "win32":
        return
    for item in items:
        mark = item.get_closest_marker("posix_only")
        if mark is not None:
            reason = mark.args[0] if mark.args else mark.kwargs["reason"]
        elif "conda_channel" in getattr(item, "fixturenames", ()):
            reason = CONDA_CHANNEL
        else:
            continue
        item.add_marker(pytest.mark.skip(reason=POSIX_ONLY + reason))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The Windows lane's counts; any skip on Windows that is not POSIX-only is counted apart."""
    if sys.platform != "win32":
        return
    stats = terminalreporter.stats
    skipped = stats.get("skipped", [])
    posix = sum(1 for report in skipped if POSIX_ONLY in str(report.longrepr))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    other = Counter(str(report.longrepr[2]) if isinstance(report.longrepr, tuple)
                    else str(report.longrepr) for report in skipped
                    if POSIX_ONLY not in str(report.longrepr))
    for reason, count in sorted(other.items()):
        terminalreporter.write_line(f"  other skip ({count}): {reason}")
    e2e = {outcome: sum(1 for report in stats.get(outcome, [])
                        if getattr(report, "nodeid", "").startswith(E2E))
           for outcome in ("passed", "skipped", "failed", "error")}
    terminalreporter.write_line(
        f"windows e2e: {e2e['passed']} passed / {e2e['skipped']} skipped / "
        f"{e2e['failed'] + e2e['error']} failed ({E2E}: apply, verify, rollback, kill + resume)")
    terminalreporter.write_line(
        f"windows lane: {len(stats.get('passed', []))} passed / {posix} POSIX-only skipped / "
        f"{len(skipped) - posix} other skipped / {failed} failed")

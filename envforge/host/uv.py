"""uv, the PyPI resolver envforge drives: where its binary is and the environment it runs in.

Lock (resolve) and bundle (builds) run uv in ``uv_environ``, so neither picks up a user's uv
or pip configuration. Apply installs with pypa's installer, not uv; it asks uv only for a
missing interpreter (``host.interpreters.install_with_uv``), in the user's environment, where
a ``UV_PYTHON_INSTALL_MIRROR`` is the user's to choose.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping

from envforge.errors import ResolveError
from envforge.paths import envforge_dirs


@functools.cache
def uv_binary() -> str:
    """uv from this interpreter's environment (the ``uv`` wheel), else from PATH; found once
    a process (the ``uv`` module's import and its search cost a build 20 ms)."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise ResolveError("uv is needed to resolve PyPI packages: "
                               "pip install 'envforge[resolve]'") from None
        return found


def uv_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for uv: no user config or index settings leak into a lock, and lock,
    apply and bundle share one uv cache inside envforge's (so --offline can rely on it); a
    lost DNS reply costs uv 1 s, not 5 (``host.dnsretry``)."""
    from envforge.host.dnsretry import host_retry_options

    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith(("UV_", "PIP_"))}
    env.update(host_retry_options(source))
    env["UV_NO_CONFIG"] = "1"
    env["UV_CACHE_DIR"] = str(envforge_dirs(dict(source)).cache / "uv")
    return env

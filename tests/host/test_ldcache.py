"""The loader cache as ldconfig -p prints it, parsed once for apply and doctor."""

from __future__ import annotations

import sys
from pathlib import Path

from envforge.host.ldcache import cache_entries, ldconfig_output, parse_ldconfig

# ldconfig -p on Debian bookworm (x86-64), trimmed.
TEXT = """\
1234 libs found in cache `/etc/ld.so.cache'
\tlibnvrtc.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libnvrtc.so.12
\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1
\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1
\tlibcuda.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so
"""


def test_x86_64_entries_in_the_cache_s_order() -> None:
    assert list(cache_entries(TEXT)) == [
        ("libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.12"),
        ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
        ("libcuda.so", "/usr/lib/x86_64-linux-gnu/libcuda.so")]
    assert parse_ldconfig(TEXT, "libcuda.so.1") == [Path("/usr/lib/x86_64-linux-gnu/libcuda.so.1")]


def test_a_command_that_fails_or_is_missing_gives_nothing(tmp_path: Path) -> None:
    assert ldconfig_output([sys.executable, "-c", "print('x')"]) == "x\n"
    assert ldconfig_output([sys.executable, "-c", "import sys; print('x'); sys.exit(1)"]) == ""
    assert ldconfig_output([str(tmp_path / "no-such-ldconfig"), "-p"]) == ""

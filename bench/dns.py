"""How this host's DNS treats the lookups uv makes: the share of lookups that wait for a
resend (glibc's defaults, then envforge's quick retry), and how many lookups one uv
resolution makes (strace, where installed). The figures in ``envforge/host/dnsretry.py``'s
reasoning and the README come from this.

    .venv/bin/python bench/dns.py [--host pypi.org] [--lookups 200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import clean_environ
from bench.scenarios.common import INDEX, SIZES, UV_PLATFORMS

# a child, so that glibc reads RES_OPTIONS afresh: lookups in threads, each one timed
LOOKUPS = """
import json, socket, sys, time
from concurrent.futures import ThreadPoolExecutor
host, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def one(_):
    t = time.monotonic()
    try:
        socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    except OSError:
        pass
    return time.monotonic() - t
with ThreadPoolExecutor(threads) as pool:
    print(json.dumps(sorted(pool.map(one, range(n)))))
"""


def lookups(host: str, n: int, threads: int, res_options: str | None) -> list[float]:
    env = clean_environ(**({"RES_OPTIONS": res_options} if res_options else {}))
    done = subprocess.run([sys.executable, "-c", LOOKUPS, host, str(n), str(threads)],
                          env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def uv_lookups(uv: str) -> int | None:
    """DNS connections (UDP port 53) one cold uv resolution of ml30's packages makes."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    spec = tomllib.loads(SIZES["ml30"].read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.in"
        req.write_text("\n".join(spec["pypi"]["packages"]) + "\n", encoding="utf-8")
        trace = Path(tmp) / "trace"
        subprocess.run([strace, "-f", "-e", "trace=connect", "-o", str(trace), uv, "pip",
                        "compile", str(req), "-q", "--no-config", "--index-url", INDEX,
                        "--python-version", "3.7.16", "--python-platform",
                        UV_PLATFORMS["win-64"], "--cache-dir", str(Path(tmp) / "cache"),
                        "-o", str(Path(tmp) / "out.txt")],
                       env=clean_environ(), check=True, capture_output=True)
        return sum("htons(53)" in line for line in trace.read_text().splitlines())


def main() -> int:
    from envforge.host.dnsretry import QUICK_RETRY
    from envforge.host.uv import uv_binary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="pypi.org")
    parser.add_argument("--lookups", type=int, default=200)
    args = parser.parse_args()
    print("| resolver options | threads | lookups | waited > 0.5 s | slowest |")
    print("|---|---:|---:|---:|---:|")
    for options in (None, QUICK_RETRY):
        for threads in (1, 4):
            times = lookups(args.host, args.lookups, threads, options)
            slow = sum(t > 0.5 for t in times)
            print(f"| {options or 'glibc defaults'} | {threads} | {len(times)} | "
                  f"{slow} ({100 * slow / len(times):.0f}%) | {times[-1]:.3f} s |")
    counted = uv_lookups(uv_binary())
    print("uv's DNS lookups for one cold ml30 resolution (win-64): "
          + ("strace not installed" if counted is None else str(counted)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

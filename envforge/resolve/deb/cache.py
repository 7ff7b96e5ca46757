"""The stanzas a lock needs from an index, kept beside it by the index's sha256, so
re-locking against an unchanged archive does not even read the index again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path

from envforge.host.atomicfile import write_atomic
from envforge.resolve.deb.index import DebStanza

# 2: stanzas carry Priority, and a subset holds the packages providing a wanted name
PARSED_FORMAT = 2


def parsed_cache(cache: Path, sha256: str, name: str, wanted: Iterable[str]) -> Path:
    """Where the stanzas ``wanted`` from the index with this sha256 are kept.

    Why an entry is as trustworthy as the index itself:

    - Its key is the sha256 that the Release file lists for the index, and the Release is
      fetched and its InRelease signature checked by gpgv on every lock: an index the
      archive no longer vouches for is never looked up, and one it vouches for has exactly
      one content.
    - An entry is written only here, from bytes whose sha256 and size were just checked
      against that Release entry, by a deterministic parse (``parse_packages_subset``) of
      the names in the key; reading it back gives what parsing the index again would.
    - It records its own sha256: a truncated or damaged entry is parsed again from the
      index, never half used.
    - Someone able to write envforge's cache folder could forge an entry; the same person
      could forge the uv cache from which the PyPI half of the same lock takes its hashes,
      so the parsed subset adds no weaker link. The raw index cached beside it is still
      re-hashed on every read, as before.
    """
    names = hashlib.sha256("\n".join(sorted(set(wanted))).encode("utf-8")).hexdigest()[:16]
    return cache / "parsed" / f"{sha256}-{name}-{names}.json"


def read_parsed(path: Path, sha256: str) -> dict[str, DebStanza] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        body = json.dumps(document["stanzas"], sort_keys=True)
        if document["format"] != PARSED_FORMAT or document["index_sha256"] != sha256 \
                or document["sha256"] != hashlib.sha256(body.encode("utf-8")).hexdigest():
            return None
        return {s["package"]: DebStanza(**s) for s in document["stanzas"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_parsed(path: Path, sha256: str, index: Mapping[str, DebStanza]) -> None:
    stanzas = [asdict(index[name]) for name in sorted(index)]
    body = json.dumps(stanzas, sort_keys=True)
    document = {"format": PARSED_FORMAT, "index_sha256": sha256,
                "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(), "stanzas": stanzas}
    try:
        write_atomic(path, json.dumps(document, sort_keys=True).encode("utf-8"))
    except OSError:
        return  # the cache is an optimisation: the next lock parses the index again

"""The GPU architectures of the CUDA fatbins inside a library: how the wheels' ``arches`` and
``ptx`` rows of torch.toml were read (``python -m envforge.packs.torch.fatbin LIB``).

``cuobjdump --list-elf`` of CUDA 13 refuses any file holding an sm_35 image ("Support for
'sm_35' has been removed"), which every torch 1.x wheel does; this reads the fatbin headers
themselves. A fatbin is a 16-byte header (magic 0xBA55ED50, version 1, header size, payload
size) followed by entries, each with its own header: kind (1 PTX, 2 ELF), header size,
padded payload size, and at offset 28 the architecture number (70 for sm_70)."""

from __future__ import annotations

import mmap
import struct
import sys
from collections import Counter
from pathlib import Path

MAGIC = struct.pack("<I", 0xBA55ED50)
_HEADER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHII")
_ARCH_AT = 28
_KINDS = {1: "compute", 2: "sm"}


def fatbin_arches(data: bytes | mmap.mmap) -> Counter[str]:
    """How many kernel images (``sm_70``) and PTX texts (``compute_50``) each architecture has."""
    found: Counter[str] = Counter()
    position = data.find(MAGIC)
    while position != -1 and position + _HEADER.size <= len(data):
        _, version, header, size = _HEADER.unpack_from(data, position)
        entry, end = position + header, position + header + size
        if version != 1 or header != _HEADER.size or end > len(data):
            position = data.find(MAGIC, position + 4)
            continue
        while entry + _ARCH_AT + 4 <= end:
            kind, _, entry_header, padded = _ENTRY.unpack_from(data, entry)
            if kind not in _KINDS or entry_header <= _ARCH_AT:
                break
            arch = struct.unpack_from("<I", data, entry + _ARCH_AT)[0]
            found[f"{_KINDS[kind]}_{arch}"] += 1
            entry += entry_header + padded
        position = data.find(MAGIC, end)
    return found


def file_arches(path: Path) -> Counter[str]:
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return fatbin_arches(data)


def main(argv: list[str]) -> int:
    for name in argv:
        counts = file_arches(Path(name))
        print(name, " ".join(f"{arch}:{counts[arch]}" for arch in sorted(counts)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

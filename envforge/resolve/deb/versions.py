"""dpkg's version order: ``[epoch:]upstream[-revision]`` compared as ``verrevcmp`` does."""

from __future__ import annotations

from functools import cmp_to_key


def _order(char: str) -> int:
    """dpkg's weight of one non-digit character: ``~`` sorts before the end, letters first."""
    if char == "~":
        return -1
    if "a" <= char <= "z" or "A" <= char <= "Z":
        return ord(char)
    return ord(char) + 256


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def _verrevcmp(a: str, b: str) -> int:
    """Compare upstream versions or revisions the way dpkg's ``verrevcmp`` does."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not _is_digit(a[i])) or (j < len(b) and not _is_digit(b[j])):
            ac = _order(a[i]) if i < len(a) and not _is_digit(a[i]) else 0
            bc = _order(b[j]) if j < len(b) and not _is_digit(b[j]) else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        first_diff = 0
        while i < len(a) and _is_digit(a[i]) and j < len(b) and _is_digit(b[j]):
            if not first_diff and a[i] != b[j]:
                first_diff = -1 if a[i] < b[j] else 1
            i += 1
            j += 1
        if i < len(a) and _is_digit(a[i]):
            return 1
        if j < len(b) and _is_digit(b[j]):
            return -1
        if first_diff:
            return first_diff
    return 0


def split_version(version: str) -> tuple[int, str, str]:
    """``[epoch:]upstream[-revision]`` -> (epoch, upstream, revision); ValueError if malformed."""
    text = version.strip()
    epoch = 0
    if ":" in text:
        head, text = text.split(":", 1)
        if not head.isdigit():
            raise ValueError(f"invalid epoch in Debian version {version!r}")
        epoch = int(head)
    upstream, _, revision = text.rpartition("-") if "-" in text else (text, "", "")
    if not upstream or not _is_digit(upstream[0]):
        raise ValueError(f"Debian version {version!r} must start with a digit")
    return epoch, upstream, revision


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` sorts before, equal to or after ``b`` in dpkg's order."""
    ea, ua, ra = split_version(a)
    eb, ub, rb = split_version(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _verrevcmp(ua, ub) or _verrevcmp(ra, rb)


version_key = cmp_to_key(compare_versions)


def satisfies(version: str, op: str, reference: str) -> bool:
    """Whether ``version op reference`` holds; ``<`` and ``>`` are dpkg's old ``<=``/``>=``."""
    cmp = compare_versions(version, reference)
    checks = {"<<": cmp < 0, "<=": cmp <= 0, "<": cmp <= 0, "=": cmp == 0,
              ">=": cmp >= 0, ">": cmp >= 0, ">>": cmp > 0}
    if op not in checks:
        raise ValueError(f"unknown Debian version relation {op!r}")
    return checks[op]

"""Windows: PATH editing as pure functions over strings, and the registry behind a seam.

PATH logic never touches the machine, so it is tested on Linux with plain strings.
The registry is reached only through ``RegistrySeam``: ``WinRegistry`` on Windows,
``RecordingRegistry`` in tests and for ``--dry-run``. A user's PATH is usually
REG_EXPAND_SZ holding ``%VAR%`` entries; they are kept unexpanded, and the type kept.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from envforge.errors import StepError

# winreg's value types (the numbers are Windows' own, so they survive a JSON round trip).
REG_SZ = 1
REG_EXPAND_SZ = 2
REG_DWORD = 4

USER_ENVIRONMENT = r"HKEY_CURRENT_USER\Environment"
SYSTEM_ENVIRONMENT = (r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Control"
                      r"\Session Manager\Environment")

RegistryValue = str | int


class RegistrySeam(Protocol):
    """The four registry operations envforge needs; a missing value reads as None."""

    def get(self, key: str, name: str) -> tuple[RegistryValue, int] | None: ...

    def set(self, key: str, name: str, value: RegistryValue, value_type: int) -> None: ...

    def delete(self, key: str, name: str) -> None:
        """Remove a value; removing one that is not there is not an error."""
        ...

    def broadcast_setting_change(self) -> None:
        """Tell running programs (Explorer, new shells) that the environment changed."""
        ...


@dataclass(frozen=True)
class RegistryWrite:
    op: str  # "set" or "delete"
    key: str
    name: str
    value: RegistryValue | None = None
    value_type: int | None = None


@dataclass
class RecordingRegistry:
    """An in-memory registry that records every write; names compare case-insensitively."""

    values: dict[tuple[str, str], tuple[RegistryValue, int]] = field(default_factory=dict)
    writes: list[RegistryWrite] = field(default_factory=list)
    broadcasts: int = 0

    def __post_init__(self) -> None:
        self.values = {_fold(k, n): v for (k, n), v in self.values.items()}

    def get(self, key: str, name: str) -> tuple[RegistryValue, int] | None:
        return self.values.get(_fold(key, name))

    def set(self, key: str, name: str, value: RegistryValue, value_type: int) -> None:
        self.values[_fold(key, name)] = (value, value_type)
        self.writes.append(RegistryWrite("set", key, name, value, value_type))

    def delete(self, key: str, name: str) -> None:
        self.values.pop(_fold(key, name), None)
        self.writes.append(RegistryWrite("delete", key, name))

    def broadcast_setting_change(self) -> None:
        self.broadcasts += 1


def _fold(key: str, name: str) -> tuple[str, str]:
    return _long_hive(key).casefold(), name.casefold()


_HIVES = {"HKCU": "HKEY_CURRENT_USER", "HKLM": "HKEY_LOCAL_MACHINE"}


def _long_hive(key: str) -> str:
    hive, _, rest = key.partition("\\")
    return f"{_HIVES.get(hive.upper(), hive.upper())}\\{rest}"


class WinRegistry:
    """The real registry through winreg; only constructed on Windows."""

    def __init__(self) -> None:
        if sys.platform != "win32":
            raise StepError("the Windows registry can only be changed on Windows")

    def get(self, key: str, name: str) -> tuple[RegistryValue, int] | None:
        if sys.platform == "win32":
            import winreg

            hive, sub = self._split(key)
            try:
                with winreg.OpenKey(hive, sub, 0, winreg.KEY_READ) as handle:
                    value, kind = winreg.QueryValueEx(handle, name)
            except FileNotFoundError:
                return None
            return value, kind
        raise StepError("the Windows registry can only be read on Windows")

    def set(self, key: str, name: str, value: RegistryValue, value_type: int) -> None:
        if sys.platform == "win32":
            import winreg

            hive, sub = self._split(key)
            with winreg.CreateKeyEx(hive, sub, 0, winreg.KEY_SET_VALUE) as handle:
                winreg.SetValueEx(handle, name, 0, value_type, value)
            return
        raise StepError("the Windows registry can only be changed on Windows")

    def delete(self, key: str, name: str) -> None:
        if sys.platform == "win32":
            import winreg

            hive, sub = self._split(key)
            try:
                with winreg.OpenKey(hive, sub, 0, winreg.KEY_SET_VALUE) as handle:
                    winreg.DeleteValue(handle, name)
            except FileNotFoundError:
                pass
            return
        raise StepError("the Windows registry can only be changed on Windows")

    def broadcast_setting_change(self) -> None:
        if sys.platform == "win32":
            import ctypes

            result = ctypes.c_size_t()
            # HWND_BROADCAST, WM_SETTINGCHANGE, "Environment", SMTO_ABORTIFHUNG, 5 s
            ctypes.windll.user32.SendMessageTimeoutW(
                0xFFFF, 0x001A, 0, "Environment", 0x0002, 5000, ctypes.byref(result))

    @staticmethod
    def _split(key: str) -> tuple[int, str]:
        if sys.platform == "win32":
            import winreg

            hive, _, sub = _long_hive(key).partition("\\")
            hives = {"HKEY_CURRENT_USER": winreg.HKEY_CURRENT_USER,
                     "HKEY_LOCAL_MACHINE": winreg.HKEY_LOCAL_MACHINE}
            if hive not in hives:
                raise StepError(f"unsupported registry hive in {key!r}")
            return hives[hive], sub
        raise StepError("the Windows registry can only be reached on Windows")


def host_registry() -> WinRegistry | None:
    """This machine's registry where it has one (Windows), else None."""
    return WinRegistry() if sys.platform == "win32" else None


# --- PATH as strings -------------------------------------------------------------------

def split_path(value: str) -> list[str]:
    """``;``-separated entries, empty ones dropped, each kept exactly as written."""
    return [entry for entry in value.split(";") if entry.strip()]


def join_path(entries: Iterable[str]) -> str:
    return ";".join(entries)


_VAR = re.compile(r"%([^%;]+)%")


def expand_vars(text: str, environ: Mapping[str, str]) -> str:
    """Expand ``%VAR%`` as Windows does: names case-insensitive, unknown ones left as they are."""
    folded = {k.upper(): v for k, v in environ.items()}
    return _VAR.sub(lambda m: folded.get(m[1].upper(), m[0]), text)


def normalize_entry(entry: str, environ: Mapping[str, str] | None = None) -> str:
    """How entries compare: expanded, unquoted, backslashes, no trailing slash, case-folded."""
    text = expand_vars(entry.strip().strip('"'), environ or {})
    text = text.replace("/", "\\")
    if len(text) > 3:  # keep "C:\"
        text = text.rstrip("\\")
    return text.casefold()


def same_entry(a: str, b: str, environ: Mapping[str, str] | None = None) -> bool:
    return normalize_entry(a, environ) == normalize_entry(b, environ)


_CUDA_BIN = re.compile(r"\\cuda\\v(\d+\.\d+)\\bin$")
_CUDA_VAR_BIN = re.compile(r"^%cuda_path(?:_v(\d+)_(\d+))?%\\bin$")


def cuda_bin_version(entry: str, environ: Mapping[str, str] | None = None) -> str | None:
    """``"10.2"`` for a CUDA toolkit's bin folder, ``"?"`` for one of unknown version, else None.

    Recognises the installer's ``...\\CUDA\\v10.2\\bin`` and ``%CUDA_PATH_V10_2%\\bin``;
    ``%CUDA_PATH%\\bin`` counts as unknown unless CUDA_PATH is in ``environ``.
    """
    text = normalize_entry(entry, environ)
    found = _CUDA_BIN.search(text)
    if found:
        return found[1]
    var = _CUDA_VAR_BIN.match(text)
    if var:
        return f"{var[1]}.{var[2]}" if var[1] else "?"
    return None


@dataclass(frozen=True)
class PathEdit:
    """A PATH value after arranging it, and what the user should know about the rest."""

    value: str
    changed: bool
    findings: tuple[str, ...] = ()


def arrange_path(value: str, *, mingw_bin: str | None = None, cuda_bin: str | None = None,
                 environ: Mapping[str, str] | None = None,
                 remove_other_cuda: bool = False) -> PathEdit:
    """MinGW's bin first (its g++ must win), then exactly one bin of our CUDA, then the rest.

    Entries equal to ours (compared expanded and case-insensitively) and other bins of
    our CUDA version are dropped, so the result holds ours once. Bins of other CUDA
    versions stay after ours (or go, with ``remove_other_cuda``) and are reported.
    Arranging an arranged value returns it unchanged, byte for byte.
    """
    env = environ or {}
    ours = cuda_bin_version(cuda_bin, env) if cuda_bin else None
    kept: list[str] = []
    findings: list[str] = []
    for entry in split_path(value):
        if mingw_bin and same_entry(entry, mingw_bin, env):
            continue
        if cuda_bin:
            if same_entry(entry, cuda_bin, env):
                continue
            version = cuda_bin_version(entry, env)
            if version is not None and ours not in (None, "?") and version == ours:
                continue
            if version is not None:
                what = "CUDA of unknown version" if version == "?" else f"CUDA {version}"
                if remove_other_cuda:
                    findings.append(f"removed {entry} from PATH ({what})")
                    continue
                findings.append(f"PATH also holds {entry} ({what}); it comes after {cuda_bin}")
        kept.append(entry)
    front = [e for e in (mingw_bin, cuda_bin) if e]
    entries = [*front, *kept]
    if entries == split_path(value):
        return PathEdit(value=value, changed=False, findings=tuple(findings))
    return PathEdit(value=join_path(entries), changed=True, findings=tuple(findings))


def path_value_type(value: str, current_type: int | None) -> int:
    """REG_EXPAND_SZ when the value holds ``%VAR%`` or already was; REG_SZ otherwise.

    Writing ``%CUDA_PATH%\\bin`` as REG_SZ would leave it unexpanded for every program.
    """
    if current_type == REG_EXPAND_SZ or _VAR.search(value):
        return REG_EXPAND_SZ
    return REG_SZ

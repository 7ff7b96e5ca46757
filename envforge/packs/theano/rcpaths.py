"""Where Theano looks for ``.theanorc``, computed for another machine: pure, no I/O (the
environment is a parameter, so a Windows layout is computed, and tested, on Linux)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from envforge.host.platform import expand_home, home_dir
from envforge.platforms import Os, Platform, TargetPlatform, platform_of


@dataclass(frozen=True)
class TheanorcPaths:
    """The config files Theano reads, in reading order (a file further right wins)."""

    home: PurePath | None  # what ``~`` expands to for that Python; None: it does not expand
    files: tuple[PurePath, ...]
    write_to: PurePath  # the file whose settings win: write here for them to take effect


def theanorc_paths(platform: Platform | TargetPlatform, environ: Mapping[str, str], *,
                   python: str = "3.7") -> TheanorcPaths:
    """Theano's ``config_files_from_theanorc`` (1.0.5), computed for another machine.

    THEANORC (split on the target's ``os.pathsep``) or ``~/.theanorc``; on Windows with
    THEANORC unset, ``~/.theanorc.txt`` is read too, last, so it wins.
    """
    target = platform_of(platform)
    pure = target.pure_path
    home = home_dir(target, environ, python=python)
    theanorc = target.getenv(environ, "THEANORC")
    raw = ["~/.theanorc"] if theanorc is None else theanorc.split(target.pathsep)
    if theanorc is None and target.os is Os.WINDOWS:
        raw.append("~/.theanorc.txt")
    files = tuple(expand_home(item, home, pure) for item in raw if item)
    # THEANORC="" makes Theano read nothing; ~/.theanorc is where it reads once unset.
    fallback = expand_home("~/.theanorc", home, pure)
    return TheanorcPaths(home=home, files=files, write_to=files[-1] if files else fallback)

"""What a lock holds for Theano: ``[platforms.X.expect.theano]``, and how lock format 1
(``expect.theano_flags`` and ``theano_flag_spelling`` in the core tables) becomes it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from envforge.envlayout import COMPILEDIR_IN_ENV
from envforge.lockfile import Expectations
from envforge.packs.theano.section import FlagName, FlagValue, theano_section
from envforge.spec import Frozen, PlatformSpec


class TheanoExpect(Frozen):
    """Theano's flags as the lock's Theano release names them, ``{prefix}`` left in place."""

    flags: dict[FlagName, FlagValue]
    flag_spelling: Literal["dots", "double-underscores"] | None = None
    # where the rc file goes ([theano] theanorc), read by apply; a table of lock format 2
    # had none (the spec's default), and its lock is re-locked before apply reads it
    theanorc: Literal["home", "env"] = "env"


def theano_expect(expect: Expectations) -> TheanoExpect:
    """The lock's Theano expectations; none (no flags) where the pack was not mounted."""
    found = expect.packs.get("theano")
    return found if isinstance(found, TheanoExpect) else TheanoExpect(flags={})


def expected_flags(pspec: PlatformSpec, theano: str | None) -> dict[str, str]:
    """The Theano flags a lock holds for the spec, ``{prefix}`` left in place."""
    from envforge.packs.theano.flags import theano_flags

    section = theano_section(pspec)
    flags = theano_flags(section, theano, "{prefix}") if theano else {}
    if theano and section.compiledir is None:
        # A compile cache per environment: a second verify reuses the first one's modules.
        flags["base_compiledir"] = "{prefix}/" + COMPILEDIR_IN_ENV
    return flags


def expectations(pspec: PlatformSpec, versions: Mapping[str, str]) -> TheanoExpect:
    theano = versions.get("theano")
    spelling = None
    if theano is not None:
        from envforge.packs.theano.knowledge import theano_rules

        spelling = theano_rules(theano).spelling
    return TheanoExpect(flags=expected_flags(pspec, theano), flag_spelling=spelling,
                        theanorc=theano_section(pspec).theanorc)


def migrate_v1(table: dict[str, Any]) -> None:
    """Format 1 kept Theano's flags in the core tables; format 2 in the pack's own."""
    expect = table.get("expect")
    if not isinstance(expect, dict):
        return
    moved: dict[str, Any] = {}
    if "theano_flags" in expect:
        moved["flags"] = expect.pop("theano_flags")
    if "theano_flag_spelling" in table:
        moved["flag_spelling"] = table.pop("theano_flag_spelling")
    if moved:
        expect["theano"] = moved

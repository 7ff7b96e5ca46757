"""Theano's flags from a spec's [theano] table, rendered as a .theanorc or THEANO_FLAGS.

Pure: no file is read or written here. Flags travel as canonical dotted names
(``blas.ldflags``); only rendering picks the spelling of the locked Theano-PyMC
release, because 1.0.5 reads dots and 1.0.12 onwards wants ``__`` in THEANO_FLAGS.
The renderers refuse what Theano's own parsers would mangle rather than write it.
"""

from __future__ import annotations

import configparser

from envforge.errors import InputError
from envforge.packs.theano.knowledge import theano_knowledge, theano_rules
from envforge.packs.theano.section import TheanoSection

# The flag each [theano] key renders, in rendering order; values are the spec's TOML keys.
FIELD_FLAGS: dict[str, str] = {
    "device": "device",
    "floatX": "floatX",
    "mode": "mode",
    "allow_gc": "allow_gc",
    "gpuarray.preallocate": "preallocate",
    "dnn.enabled": "dnn",
    "blas.ldflags": "blas_ldflags",
    "gcc.cxxflags": "cxxflags",
    "cxx": "cxx",
    "base_compiledir": "compiledir",
}

# Theano's dnn.enabled values are case-sensitive; the spec speaks plainer words.
_DNN = {"auto": "auto", "enabled": "True", "disabled": "False", "no_check": "no_check"}

# shlex (posix) in Theano's THEANO_FLAGS parser treats these specially outside quotes.
_SHLEX_SPECIAL = frozenset("\"'\\#")


def field_flags(spec: TheanoSection) -> dict[str, str]:
    """The flags the typed [theano] keys set, ``{prefix}`` left in place.

    An empty string counts as unset: TOML has no null, so a platform override
    writes ``""`` to drop a general value (and let Theano compute its default).
    """
    values: dict[str, str | None] = {
        "device": spec.device,
        "floatX": spec.float_x,
        "mode": spec.mode,
        "allow_gc": str(spec.allow_gc),
        "gpuarray.preallocate": None if spec.preallocate is None else repr(spec.preallocate),
        "dnn.enabled": _DNN[spec.dnn],
        "blas.ldflags": spec.blas_ldflags or None,
        "gcc.cxxflags": spec.cxxflags or None,
        "cxx": spec.cxx or None,
        "base_compiledir": spec.compiledir or None,
    }
    return {name: value for name, value in values.items() if value is not None}


def theano_flags(spec: TheanoSection, theano_version: str, prefix: str) -> dict[str, str]:
    """Every flag the spec sets, by canonical dotted name, with ``{prefix}`` substituted.

    ``theano.flags`` keys may be dotted or, for releases that take it, spelled with ``__``;
    one that repeats a typed [theano] key is refused rather than silently overriding it.
    """
    rules = theano_rules(theano_version)
    flags = field_flags(spec)
    for key in sorted(spec.flags):
        name = rules.canonical(key)
        if name in FIELD_FLAGS:
            raise InputError(f"theano.flags sets {key}: use [theano] {FIELD_FLAGS[name]} instead")
        if name in flags:
            raise InputError(f"theano.flags sets {name} twice (as {key} too)")
        flags[name] = spec.flags[key]
    return {name: value.replace("{prefix}", prefix) for name, value in flags.items()}


def render_theanorc(flags: dict[str, str], theano_version: str) -> str:
    """A .theanorc for the release: [global] first, then sections by name, keys sorted."""
    rules = theano_rules(theano_version)
    sections: dict[str, dict[str, str]] = {}
    for name, value in flags.items():
        if "\n" in value or "\r" in value or value != value.strip():
            raise InputError(f"{name}: a .theanorc value cannot span lines or start or end "
                             f"with blanks: {value!r}")
        if "%(" in value or "%%" in value:
            raise InputError(f"{name}: Theano would %-interpolate {value!r} in a .theanorc; "
                             "pass it through THEANO_FLAGS instead")
        section, key = rules.theanorc_location(rules.canonical(name))
        sections.setdefault(section, {})[key] = value
    lines = [f"# Written by envforge for Theano-PyMC {theano_version}. Change the spec and",
             "# re-run `envforge apply` rather than editing this file."]
    for section in sorted(sections, key=lambda s: (s != "global", s)):
        lines += ["", f"[{section}]"]
        lines += [f"{key} = {value}".rstrip() for key, value in sorted(sections[section].items())]
    return "\n".join(lines) + "\n"


def render_theano_flags_env(flags: dict[str, str], theano_version: str) -> str:
    """The THEANO_FLAGS value: ``name=value`` pairs, comma separated, in the release's spelling.

    Theano splits the value with shlex on commas, so a comma cannot be carried at all,
    and quotes, backslashes and ``#`` are passed inside double quotes.
    """
    rules = theano_rules(theano_version)
    pairs = []
    for name in sorted(flags):
        value = flags[name]
        if "," in value:
            raise InputError(f"{name}={value!r}: THEANO_FLAGS cannot carry a comma in a value; "
                             "set it in a .theanorc ([theano] theanorc) instead")
        if "\n" in value or "\r" in value:
            raise InputError(f"{name}={value!r}: THEANO_FLAGS values cannot span lines")
        if _SHLEX_SPECIAL & set(value):
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        pairs.append(f"{rules.spell(rules.canonical(name))}={value}")
    return ",".join(pairs)


def parse_theanorc(text: str) -> dict[str, str]:
    """The flags a .theanorc sets, by dotted name (``[blas] ldflags`` -> ``blas.ldflags``).

    Read as Theano reads it: option names are case-insensitive (``floatx`` is ``floatX``),
    section names are not, and a malformed file is an error as it is at ``import theano``.
    Values are raw (Theano's %-interpolation is not applied); sections spelled with ``__``
    are given dotted, and keys of a ``[DEFAULT]`` section come back as ``DEFAULT.<key>``.
    """
    parser = configparser.ConfigParser(interpolation=None, default_section="\0")
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise InputError(f".theanorc: {' '.join(str(exc).split())}") from None
    canonical = _canonical_names()
    flags: dict[str, str] = {}
    for section in parser.sections():
        for key, value in parser.items(section):
            dotted = key if section == "global" else f"{section.replace('__', '.')}.{key}"
            known = canonical.get(dotted.lower())
            flags[known if known is not None and _same_section(known, dotted) else dotted] = value
    return flags


def _canonical_names() -> dict[str, str]:
    names = (name for row in theano_knowledge().flag_names for name in row.names)
    return {name.lower(): name for name in names}


def _same_section(known: str, dotted: str) -> bool:
    return known.rpartition(".")[0] == dotted.rpartition(".")[0]

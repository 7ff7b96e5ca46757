"""What envforge publishes to a framework pack, its own or a third party's: the protocol a
pack meets (``protocol.py``: FrameworkPack, Report, Migration), the neutral defaults a pack
inherits (``defaults.py``: PackDefaults) and the pack whose hooks live in its own modules
(``modulepack.py``: ModulePack)."""

from envforge.packs.defaults import PackDefaults
from envforge.packs.modulepack import ModulePack
from envforge.packs.protocol import FrameworkPack, Migration, Report

__all__ = ["FrameworkPack", "Migration", "ModulePack", "PackDefaults", "Report"]

"""The pack API at the bottom of the core: the ``Registry`` value and the least a pack is.

The app layer builds one ``Registry`` (``envforge.packs.load_packs``) and hands it down as an
argument, as pytest hands its plugin manager around on ``config``; nothing below the app layer
imports a pack. Each caller declares the Protocol of the pack members it calls, beside itself
(issue 26: per-phase protocols, each declared where its caller lives), so this package imports
nothing of the core's phases.
"""

from __future__ import annotations

from envforge.packapi.registry import Pack, Registry

__all__ = ["Pack", "Registry"]

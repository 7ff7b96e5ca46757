"""Resolve ``[debian]`` package names into ``LockedDeb`` records from a Debian archive.

mirror.py is the network edge (``resolve_debs`` and the ``Fetch`` it is given); the rest is
pure: versions.py (dpkg's version order), index.py (the Release and Packages parsers),
selection.py (picking the packages and the dependency check), cache.py (the parsed
stanzas kept by the index's sha256). Integrity rests on HTTPS to the mirror, the
InRelease signature (gpgv, when a keyring is there) and the sha256 chain Release ->
Packages index -> .deb.
"""

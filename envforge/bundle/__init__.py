"""Offline bundles: every file a lock names for one platform, in one folder a closed host can use.

``manifest`` is the on-disk record (pure), ``build`` gathers and builds the files, ``check``
compares a bundle with its manifest and a lock, ``sources`` finds the verified local file
for each locked one when apply runs from a bundle or the cache, and ``wheels`` builds wheels
from sdists and envforge itself. This module imports nothing, so ``host.fetch`` can read
manifests without pulling in the builder.
"""

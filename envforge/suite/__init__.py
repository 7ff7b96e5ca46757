"""``envforge verify --suite``: the framework's own tests, run in the applied environment.

``plugin`` runs inside the environment (pytest plugin, standard library only); ``results``
is the pure judge; ``runner`` prepares the runner folder and runs pytest (host side effects).
"""

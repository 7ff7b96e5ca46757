"""The application layer: what a command does, apart from its arguments and its output.

``commands/`` parse arguments, call these and render; the domain below never imports them.
``project`` loads a spec with where its lock is, ``locking`` locks it, ``context`` turns a
project, the host and a run's options into the ``StepContext`` steps read (with the run's
``Sources`` injected), ``verification`` runs the probe and the suite, ``status`` reads what
is applied, ``diagnose`` is doctor's judgement of the host, ``doctorfixes`` runs its fixes
through apply's executor (so doctor never imports apply) and ``drafting`` is init's.
Submodules are imported on demand (start-up time is most of a no-op apply), so this package
re-exports nothing.

The layers, each importing only those below it (``make lint`` enforces it with import-linter,
the contract in pyproject.toml):

    cli -> commands -> app -> {plan, executor, verify, doctor, bundle, ...}
        -> lockcheck -> {steps | resolve | compat} -> lockplan
        -> {lockfile, spec, knowledge, journal, ...} -> {host, ui, paths}
        -> {model, platforms, errors, confine, tomlpos}
"""

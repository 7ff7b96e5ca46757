"""The application layer: what a command does, apart from its arguments and its output.

``commands/`` parse arguments, call these and render; the domain below never imports them.
``project`` loads a spec with its lock path, ``locking`` locks and judges staleness, and
``context`` turns a project, the host and a run's options into the ``StepContext`` steps read.
Submodules are imported on demand (start-up time is most of a no-op apply), so this package
re-exports nothing.

The layers, each importing only those below it (``make lint`` enforces it with import-linter,
``.importlinter``):

    cli -> commands -> app -> {plan, executor, verify, doctor, bundle, ...}
        -> {steps, resolve, ...} -> {lockfile, spec, knowledge, ...} -> {host} -> {model}
"""

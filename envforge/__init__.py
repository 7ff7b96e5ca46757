"""envforge: declarative, locked and verifiable environments for legacy deep-learning stacks."""

__version__ = "0.1.0"

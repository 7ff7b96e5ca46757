from envforge.cli import entry

entry()

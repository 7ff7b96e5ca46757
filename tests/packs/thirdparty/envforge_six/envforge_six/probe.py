"""envforge-six's probe: run by the environment's own Python (3.6+), it reads the
request as JSON on stdin and prints one report: six's version and each move imported."""

import importlib
import json
import platform
import sys


def main():
    request = json.load(sys.stdin)
    report = {"format": 1, "python": {"version": platform.python_version()},
              "versions": {}, "import_errors": {}, "six": {"moves": {}}}
    try:
        import six
    except Exception as exc:
        report["import_errors"]["six"] = f"{type(exc).__name__}: {exc}"
    else:
        report["versions"]["six"] = six.__version__
        for name in request.get("six", {}).get("moves", []):
            try:
                importlib.import_module("six.moves." + name)
                report["six"]["moves"][name] = "imports"
            except Exception as exc:
                report["six"]["moves"][name] = f"{type(exc).__name__}: {exc}"
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()

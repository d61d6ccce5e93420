"""``python -m gro_replay``: the same command line as the ``gro-replay`` console script."""

import sys

from . import import_failed

try:
    from .cli import entry
except ImportError as e:  # the entry itself gone (an install under way), or click: no entry() to say it
    line, code = import_failed(e)
    sys.stderr.write(line + "\n")
    sys.exit(code)

if __name__ == "__main__":
    entry()

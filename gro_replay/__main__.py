"""``python -m gro_replay``: the same command line as the ``gro-replay`` console script."""

from .cli import entry

if __name__ == "__main__":
    entry()

"""``python -m gro_replay.cli``: the same command line as the ``gro-replay`` console script."""

from .entry import entry

if __name__ == "__main__":  # pragma: no cover
    entry()

"""The input's digest: what identifies the bytes a document replayed (JSON ``input.blake3`` / ``input.sha256``).

``diff`` refuses documents of different captures by it, and a reader checks it against the file:

- ``blake3`` (the default): BLAKE3 with its default 32-byte output, by the ``blake3`` package (the Python binding of
  the BLAKE3 team's Rust implementation); ``b3sum FILE`` prints the same hex. About 6 GB/s a core where SHA-256 runs
  at about 1.1 (measured on the benchmark machine, issue 12): on a 1.5 GB capture the SHA-256 alone took ~1.2 CPU
  seconds, half of the replay's.
- ``sha256`` (``--digest sha256``): hashlib's SHA-256, as ``sha256sum FILE``; the digest documents written before
  BLAKE3 record, so a baseline of those is compared with a current document of the same digest.

A document records the digest it computed under that algorithm's key and null under the other's.
"""

from __future__ import annotations

from typing import Protocol

#: the digests a document can record, in the order of their JSON keys (the default first)
DIGESTS = ("blake3", "sha256")
DEFAULT_DIGEST = "blake3"


class Hash(Protocol):
    """What the reader uses of a hash object (hashlib's and blake3's alike)."""

    def update(self, data: bytes | bytearray | memoryview, /) -> object: ...

    def hexdigest(self) -> str: ...


def new_hash(algorithm: str) -> Hash:
    """A fresh hash object of ``algorithm`` (one of ``DIGESTS``); both release the GIL while they hash a large
    buffer, so capture/stream.py ``DigestingRaw``'s thread hashes beside the replay.

    Raises: ValueError for an algorithm not in ``DIGESTS``."""
    if algorithm == "blake3":
        from blake3 import blake3

        return blake3()
    if algorithm == "sha256":
        import hashlib  # here: its OpenSSL binding takes ~4 ms to load, which a default (BLAKE3) run never uses

        return hashlib.sha256()
    raise ValueError(f"unknown digest {algorithm!r}; choose from {', '.join(DIGESTS)}")


def recorded(inp: dict | None) -> dict[str, str]:
    """The digests a document's ``input`` records, by algorithm (``DIGESTS`` order; null, missing or empty ones
    left out): ``{"blake3": hex}`` for a default replay, ``{"sha256": hex}`` for one with ``--digest sha256`` or
    written before BLAKE3."""
    inp = inp or {}
    return {a: str(inp[a]) for a in DIGESTS if inp.get(a)}


def digest_words(algorithm: str, hexdigest: str) -> str:
    """A digest in a line of text: its name and first 12 hex digits ("blake3 0123456789ab")."""
    return f"{algorithm} {hexdigest[:12]}"

"""``-f EXPR``: a BPF capture filter (tcpdump / tshark ``-f`` syntax) applied to each record before the replay.

libpcap compiles the expression per link type (``pcap_compile`` on a dead handle, through the ``pcapy-ng``
binding: the ``bpf`` extra, ``pip install '.[bpf]'`` in the source tree) and runs it on the record's captured bytes
(``pcap_offline_filter``). Frames it rejects are counted (``input.filtered.bpf``), never replayed.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import install_extra_hint

_SNAPLEN = 262144


class FilterError(ValueError):
    """The filter cannot be used: the binding is missing, or libpcap refused the expression (one line)."""


def _pcapy():
    try:
        import pcapy
    except ImportError:
        raise FilterError(
            f"-f needs a libpcap binding: install the bpf extra ({install_extra_hint('bpf')}, i.e. pcapy-ng)"
        ) from None
    return pcapy


class BpfFilter:
    """``match(buf, linktype) -> bool`` for a tcpdump filter expression, compiled once per link type.

    Args: expr: the filter expression. Raises: FilterError when no binding is installed or libpcap cannot compile
    ``expr`` for Ethernet (checked at construction, before any frame is read) or for a later link type.
    """

    def __init__(self, expr: str) -> None:
        self.expr = expr
        self._pcapy = _pcapy()
        self._programs: dict[int, Callable[[bytes], int]] = {}
        self._program(1)  # DLT_EN10MB: refuse a bad expression up front

    def _program(self, linktype: int):
        prog = self._programs.get(linktype)
        if prog is None:
            try:
                prog = self._pcapy.compile(linktype, _SNAPLEN, self.expr, 1, 0xFFFFFFFF).filter
            except Exception as e:  # pcapy.PcapError / BPFError: libpcap's own message
                raise FilterError(f"-f {self.expr[:80]!r}: {e}") from None
            self._programs[linktype] = prog
        return prog

    def match(self, buf: bytes, linktype: int) -> bool:
        """Whether libpcap's compiled program accepts the record ``buf`` of link type ``linktype``."""
        return self._program(linktype)(buf) != 0

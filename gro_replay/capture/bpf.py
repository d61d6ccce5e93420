"""``-f EXPR``: a BPF capture filter (tcpdump / tshark ``-f`` syntax) applied to each record before the replay.

libpcap compiles the expression per link type (``pcap_compile`` on a dead handle, through the ``pcapy-ng``
binding: the ``bpf`` extra, ``pip install '.[bpf]'`` in the source tree) and runs it on the record's captured bytes
(``pcap_offline_filter``). Frames it rejects are counted (``input.filtered.bpf``), never replayed. The record is
the reader's: without an Ethernet FCS it removed (fcs.py), as the NIC hands the frame up, so ``len`` counts 4 bytes
less there than ``tcpdump -r`` on the file.

A capture's link type is a LINKTYPE_ value (the file format's); libpcap compiles for a DLT_ value (the platform's).
They differ only for raw IP: LINKTYPE_RAW 101, and the 12/14 some old files hold, are the platform's DLT_RAW (12 on
Linux, 14 on OpenBSD): libpcap pcap-common.c ``linktype_to_dlt``. An expression that cannot be compiled for a
record's link type (``vlan`` for LINUX_SLL2, ``ether host`` for raw IP) is an error (one line, exit 2), as in
``tcpdump -r``; one libpcap proves matches nothing there (``ip`` on LINKTYPE_IPV6) rejects those records (counted).
"""

from __future__ import annotations

from collections.abc import Callable

from ..project import import_failed_words, install_extra_hint
from .linktypes import DLT_NAMES, DLT_RAW, DLT_RAW_ALT12, DLT_RAW_ALT14
from .stream import CaptureError

_SNAPLEN = 262144


class FilterError(ValueError):
    """The filter cannot be used: the binding is missing, or libpcap refused the expression (one line)."""


class FilterLinktypeError(FilterError, CaptureError):
    """libpcap cannot compile the (Ethernet-valid) expression for a link type met during the replay: a
    CaptureError, so every caller that turns an unreadable capture into one line (exit 2) turns this too."""


#: libpcap's message when the optimiser proves the program returns 0 for every packet (gencode.c)
_REJECTS_ALL = "expression rejects all packets"


def _reject(buf: bytes) -> int:
    return 0


def linktype_to_dlt(linktype: int, dlt_raw: int) -> int:
    """The DLT_ value libpcap compiles for a capture's LINKTYPE_ value (libpcap pcap-common.c
    ``linktype_to_dlt``): LINKTYPE_RAW 101 and the raw-IP values 12 (most systems) and 14 (OpenBSD) that old
    files hold are ``dlt_raw``, the platform's DLT_RAW; every other value here is the same in both spaces."""
    if linktype in (DLT_RAW, DLT_RAW_ALT12, DLT_RAW_ALT14):
        return dlt_raw
    return linktype


def linktype_name(linktype: int) -> str:
    """``"276 (LINUX_SLL2)"``: a link type as error messages name it."""
    name = DLT_NAMES.get(linktype)
    return f"{linktype} ({name})" if name else str(linktype)


def _pcapy():
    try:
        import pcapy
    except Exception as e:  # noqa: BLE001 - a package's import can raise anything (breaker43)
        broken = import_failed_words(e, "pcapy")
        raise FilterError(
            f"-f needs a libpcap binding{broken}: install the bpf extra ({install_extra_hint('bpf')}, i.e. "
            "pcapy-ng)"
        ) from None
    return pcapy


class BpfFilter:
    """``match(buf, linktype) -> bool`` for a tcpdump filter expression, compiled once per link type.

    Args: expr: the filter expression. Raises: FilterError when no binding is installed or libpcap cannot compile
    ``expr`` for Ethernet (checked at construction, before any frame is read); FilterLinktypeError (a
    CaptureError) from ``match`` when it cannot compile for a record's link type (``linktype_to_dlt``).
    """

    def __init__(self, expr: str) -> None:
        self.expr = expr
        self._pcapy = _pcapy()
        self._programs: dict[int, Callable[[bytes], int]] = {}
        self._dlt_raw = int(getattr(self._pcapy, "DLT_RAW", DLT_RAW_ALT12))
        try:
            self._programs[1] = self._compile(1)  # DLT_EN10MB: refuse a bad expression up front
        except Exception as e:  # pcapy.PcapError / BPFError: libpcap's own message
            raise FilterError(f"-f {self.expr[:80]!r}: {e}") from None

    def _compile(self, linktype: int) -> Callable[[bytes], int]:
        prog = self._pcapy.compile(
            linktype_to_dlt(linktype, self._dlt_raw), _SNAPLEN, self.expr, 1, 0xFFFFFFFF
        )
        return prog.filter

    def _program(self, linktype: int):
        prog = self._programs.get(linktype)
        if prog is None:
            try:
                prog = self._compile(linktype)
            except Exception as e:  # pcapy.PcapError / BPFError: libpcap's own message
                if str(e) != _REJECTS_ALL:
                    raise FilterLinktypeError(
                        f"-f {self.expr[:80]!r} cannot be compiled for the capture's link type "
                        f"{linktype_name(linktype)}: {e}"
                    ) from None
                prog = _reject
            self._programs[linktype] = prog
        return prog

    def match(self, buf: bytes, linktype: int) -> bool:
        """Whether libpcap's compiled program accepts the record ``buf`` of link type ``linktype``."""
        return self._program(linktype)(buf) != 0

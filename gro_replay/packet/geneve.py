"""Geneve header (RFC 8926) and option TLVs as small ``dpkt.Packet`` classes, for ``synth`` and tests.

Field names follow the kernel's ``struct genevehdr`` (ver, opt_len, oam, critical, proto_type, vni) and
``struct geneve_opt`` (opt_class, type, length). ``opt_len`` and an option's ``length`` count 4-byte words;
an option's ``length`` excludes its own 4-byte header. The options of a ``GeneveHdr`` are the raw bytes
``options`` (4·opt_len of them); its ``data`` is the inner frame, kept as bytes.

Kernel: include/net/geneve.h ``struct genevehdr``, ``struct geneve_opt``, ``GENEVE_CRIT_OPT_TYPE``.

Left out: parsing ``options`` into a list of TLVs, and decoding the inner frame: the replay path reads
headers in place, not through dpkt.
"""

from __future__ import annotations

import dpkt

#: IANA-assigned Geneve UDP port. Kernel: ``GENEVE_UDP_PORT``.
GENEVE_UDP_PORT = 6081
#: ``proto_type`` for an inner Ethernet frame (Transparent Ethernet Bridging). Kernel: ``ETH_P_TEB``.
ETH_P_TEB = 0x6558
#: High bit of an option's ``type``: the receiver must drop the packet if it does not know the option.
GENEVE_CRIT_OPT_TYPE = 0x80
#: Largest ``opt_len`` (6 bits): 63 words, 252 bytes of options.
GENEVE_MAX_OPT_LEN = 63


class GeneveOpt(dpkt.Packet):
    """One Geneve option TLV: class (16 bits), type (8), 3 reserved bits, length (5 bits, 4-byte words
    of ``data``), then ``data``.
    """

    __hdr__ = (
        ("opt_class", "H", 0),
        ("type", "B", 0),
        ("_r_length", "B", 0),
    )
    __bit_fields__ = {"_r_length": (("r", 3), ("length", 5))}

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        self.data = buf[self.__hdr_len__ : self.__hdr_len__ + 4 * self.length]


def geneve_opt(opt_class: int, opt_type: int, data: bytes = b"", *, critical: bool = False) -> bytes:
    """Bytes of one option TLV with ``length`` set from ``data``.

    Args: opt_class: 16-bit option class; opt_type: 7- or 8-bit type (``critical`` sets its high bit);
        data: option data, a multiple of 4 bytes, at most 124.
    Returns: 4 + len(data) bytes.
    Raises: ValueError if ``data`` is not a multiple of 4 bytes or longer than 31 words.
    """
    if len(data) % 4 or len(data) > 31 * 4:
        raise ValueError(f"Geneve option data must be a multiple of 4 bytes, at most 124 (got {len(data)})")
    if not 0 <= opt_class <= 0xFFFF or not 0 <= opt_type <= 0xFF:
        raise ValueError("Geneve option class must fit 16 bits and type 8 bits")
    if critical:
        opt_type |= GENEVE_CRIT_OPT_TYPE
    return bytes(GeneveOpt(opt_class=opt_class, type=opt_type, length=len(data) // 4, data=data))


class GeneveHdr(dpkt.Packet):
    """Geneve base header: 8 bytes, then ``options`` (4·opt_len bytes), then the inner frame as ``data``.

    Fields: ``ver`` (2 bits), ``opt_len`` (6 bits, 4-byte words), ``oam`` and ``critical`` (1 bit each),
    ``rsvd1`` (6 bits), ``proto_type`` (16), ``vni`` (24), ``rsvd2`` (8). ``opt_len`` is not derived from
    ``options`` automatically: set both, or use :meth:`set_options`.
    """

    __hdr__ = (
        ("_ver_opt_len", "B", 0),
        ("_flags", "B", 0),
        ("proto_type", "H", ETH_P_TEB),
        ("_vni_rsvd2", "I", 0),
    )
    __bit_fields__ = {
        "_ver_opt_len": (("ver", 2), ("opt_len", 6)),
        "_flags": (("oam", 1), ("critical", 1), ("rsvd1", 6)),
        "_vni_rsvd2": (("vni", 24), ("rsvd2", 8)),
    }

    def __init__(self, *args, **kwargs) -> None:
        self.options = b""
        super().__init__(*args, **kwargs)

    def set_options(self, options: bytes) -> None:
        """Set ``options`` and ``opt_len`` together.

        Raises: ValueError if ``options`` is not a multiple of 4 bytes or longer than 252 bytes.
        """
        if len(options) % 4 or len(options) > 4 * GENEVE_MAX_OPT_LEN:
            raise ValueError(
                f"Geneve options must be a multiple of 4 bytes, at most 252 (got {len(options)})"
            )
        self.options = bytes(options)
        self.opt_len = len(options) // 4

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        end = self.__hdr_len__ + 4 * self.opt_len
        if len(buf) < end:
            raise dpkt.NeedData(f"Geneve options need {end} bytes, have {len(buf)}")
        self.options = buf[self.__hdr_len__ : end]
        self.data = buf[end:]

    def __len__(self) -> int:
        return self.__hdr_len__ + len(self.options) + len(self.data)

    def __bytes__(self) -> bytes:
        return self.pack_hdr() + bytes(self.options) + bytes(self.data)


#: The kernel's struct names, for code read side by side with include/net/geneve.h.
genevehdr = GeneveHdr
geneve_opt_hdr = GeneveOpt

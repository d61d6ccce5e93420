"""Columnar header fields, checksum verdicts and canonical keys of a block of frames (numpy, no per-frame objects).

The batch path (pollcache.py) looks at a block of captured frames at once. For each frame of the common layout —
untagged Ethernet, IPv4 (no options, not a fragment) or IPv6 (no extension headers), UDP to a VXLAN or Geneve
port, inner untagged Ethernet, inner IPv4 (no options, not a fragment) or IPv6, TCP; every length field exactly
matching the frame — it computes:

- ``kv``: the frame's headers (up to the end of the TCP header) with the fields that change from segment to
  segment zeroed: the IPv4 IDs and header checksums, the UDP checksum, TCP sequence and acknowledgment numbers,
  window, checksum and options, and the length fields (IP total / payload lengths, UDP length: in the common
  layout each is what the frame's length gives, so the frame's length stands for them). Everything else stays
  byte for byte (addresses, ports, VNI, TTL, TOS, flags…).
- ``rel``: those varying fields as columns (``FIELDS``), to be encoded relative to the first frame of the same
  inner flow in a poll (``relative``), and the checksum verdicts (``VBITS``): outer IPv4 header, UDP (zero,
  correct, wrong), inner IPv4 header, inner TCP — the only things about the payload GRO and the stack can see.
- ``group``: a hash of the inner addresses and ports: the frames GRO may compare with each other (same inner
  flow) always share a group (hash collisions only merge groups, which loses nothing).

Checksums are ones' complement sums (RFC 1071) taken modulo 0xFFFF: the sum of a frame's bytes is read as
little-endian 32-bit words over a strided view for runs of equal-length records (one numpy pass), or by one
``reduceat`` over the block's aligned 32-bit words for the others (packet/csum.py ``frame_sums``, ``word_sums``);
a checksum is correct iff the covered words, checksum included, sum to 0 modulo 0xFFFF (the kernel's
``csum_fold(...) == 0``; the pseudo-header is never all zero). tests/test_columns.py checks every verdict against
packet/csum.py.
"""

from __future__ import annotations

import numpy as np

from ..numeric import distinct
from .csum import frame_sums
from .rows import H, head_rows, record_runs

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_TEB = 0x6558

#: columns of ``rel`` (int64): the fields encoded relative to the poll's first frame of the group
FIELDS = ("seq", "ack", "win", "oid", "iid") + tuple(f"opt{i}" for i in range(10))
_MOD = {"seq": 1 << 32, "ack": 1 << 32, "win": 1 << 16, "oid": 1 << 16, "iid": 1 << 16}
#: checksum verdict bits (column ``vbits``)
V_OUTER_IP_BAD = 1
V_UDP_ZERO = 2
V_UDP_BAD = 4
V_INNER_IP_BAD = 8
V_TCP_BAD = 16

_M = 0xFFFF
_HASH_MULT = (np.arange(1, H // 8 + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)


class Columns:
    """What ``analyse`` found for ``n`` frames; arrays have ``n`` rows.

    ``common``: bool, the frame has the common layout (everything below is meaningful only there);
    ``kv``: uint8 (n, H); ``rel``: int64 (n, len(FIELDS)); ``vbits``: uint8; ``group``: uint64;
    ``resid``: int64 (n, 4), the checksum residuals (sum of the covered words, checksum included, modulo
    0xFFFF; 0 = correct) of the outer IPv4 header, the UDP datagram (with its pseudo-header; also when the
    checksum field is 0), the inner IPv4 header and the inner TCP segment: a stack that converts one checksum into
    another (``skb_gro_checksum_try_convert``, CHECKSUM_COMPLETE) can accept a wrong TCP checksum whose error
    equals the UDP one, so the verdict bits alone do not decide. ``payload``: TCP payload bytes. ``kv_hash()``: uint64 hash of each ``kv`` row and the UDP-zero bit (the
    flow-naming part of a frame; computed once per block, on first use after ``analyse``). ``anon``: uint8 (n, H), ``kv`` without what names the flow among its peers —
    the outer UDP source port, the inner addresses and the TCP ports (sim/runs.py; computed on first use). ``syn_l4``: uint16, the inner
    TCP header's byte offset in a frame with SYN set and TCP options, else 0 (``--resegment auto`` learns a SYN's
    MSS option: sim/ingest.py ``Ingest._learn_mss``). ``tflags``: uint8, the inner TCP header's flags byte (byte 13:
    CWR ECE URG ACK PSH RST SYN FIN from the high bit; sim/runs.py cuts a flow's frames into pieces by it). ``l4``:
    int64, the inner TCP header's byte offset (capture/interface_chunks.py hashes what follows it).
    """

    __slots__ = (
        "common",
        "kv",
        "rel",
        "vbits",
        "resid",
        "group",
        "payload",
        "syn_l4",
        "tflags",
        "l4",
        "_kvh",
        "_anon",
        "_anon_of",
    )
    common: np.ndarray
    kv: np.ndarray
    rel: np.ndarray
    vbits: np.ndarray
    resid: np.ndarray
    group: np.ndarray
    payload: np.ndarray
    syn_l4: np.ndarray
    tflags: np.ndarray
    l4: np.ndarray

    _kvh: np.ndarray | None
    _anon: np.ndarray | None
    #: the rows of each layout found (a slice or an index array) and the mask that keeps their ``anon`` bytes
    _anon_of: list[tuple[slice | np.ndarray, np.ndarray]]

    def kv_hash(self, same_rows: bool = False) -> np.ndarray:
        """``same_rows``: the caller found every ``kv`` row equal (the first row's sum is every row's)."""
        if self._kvh is None:
            kv = self.kv[:1] if same_rows and len(self.kv) else self.kv
            h = kv.view(np.uint64) @ _HASH_MULT  # the weighted sum of each row's words, modulo 2**64
            zero = ((self.vbits & V_UDP_ZERO) != 0).astype(np.uint64)
            self._kvh = h ^ (zero << np.uint64(63))
        return self._kvh

    @property
    def anon(self) -> np.ndarray:
        """uint8 (n, H): ``kv`` with the outer UDP source port, the inner addresses and the TCP ports zeroed (zero
        rows where the layout is not common)."""
        if self._anon is None:
            kv = self.kv
            parts = self._anon_of
            if len(parts) == 1 and isinstance(parts[0][0], slice):
                sel, mask = parts[0]
                a = np.zeros_like(kv)
                np.bitwise_and(kv[sel], mask, out=a[sel])
            else:
                a = np.zeros_like(kv)
                for sel, mask in parts:
                    a[sel] = kv[sel] & mask
            self._anon = a
        return self._anon


def analyse(buf, data: np.ndarray, caplen: np.ndarray, vxlan_ports, geneve_ports) -> Columns:
    """Columns of the frames ``buf[data[i] : data[i] + caplen[i]]`` (Ethernet link type).

    Args: buf: the block (bytes-like); data/caplen: int64 arrays (offsets and captured lengths in bytes);
    vxlan_ports/geneve_ports: UDP destination ports of the tunnel sockets.
    Never raises on frame content: a frame of any other layout is ``common == False``.
    Frames are grouped by layout (outer/inner family, tunnel header length): within a group every header sits
    at a fixed offset, so fields are column slices.
    """
    n = len(data)
    c = Columns()
    runs = record_runs(data, caplen)
    rows = head_rows(buf, data, caplen, runs)
    L = caplen.astype(np.int64)
    c.common = np.zeros(n, bool)
    c.vbits = np.zeros(n, np.uint8)
    c.resid = np.zeros((n, 4), np.int64)
    c.rel = np.zeros((n, len(FIELDS)), np.int64)
    c.kv = rows  # rewritten in place, group by group
    c.group = np.zeros(n, np.uint64)
    c.payload = np.zeros(n, np.int64)
    c.syn_l4 = np.zeros(n, np.uint16)
    c.tflags = np.zeros(n, np.uint8)
    c.l4 = np.zeros(n, np.int64)
    c._kvh = None
    c._anon = None
    c._anon_of = []

    # outer layer, at fixed offsets: Ethernet, IPv4 (no options, not a fragment) or IPv6, UDP
    o = rows.view(_OUTER)[:, 0]
    et = o["et"]
    o4 = (et == ETH_P_IP) & (o["b14"] == 0x45) & ((o["b20"] & 0x3F) == 0) & (o["b21"] == 0)
    o4 &= (o["b23"] == 17) & (o["tot4"] + 14 == L)
    o6 = et == ETH_P_IPV6
    any6 = bool(o6.any())  # else the IPv6 fields are not read (a block of IPv4 underlay)
    if any6:
        o6 &= ((o["b14"] >> 4) == 6) & (o["b20"] == 17) & (o["plen6"] + 54 == L)
    dport = np.where(o6, o["dport6"], o["dport4"]) if any6 else o["dport4"]
    vx = _port_in(dport, vxlan_ports)
    gn = _port_in(dport, geneve_ports)
    # tunnel header length (Geneve: 8 + options), which places the inner frame (8 for all when none is Geneve)
    tlen: np.ndarray | int = 8
    if gn.any():
        gbyte = (np.where(o6, o["g6"], o["g4"]) if any6 else o["g4"]).astype(np.int64)
        tlen = np.where(vx, 8, 8 + (gbyte & 0x3F) * 4)
    cand = (o4 | o6) & (vx | gn)
    if not cand.any():
        return c
    lay = np.where(cand, (o6.astype(np.int64) << 16) | (gn.astype(np.int64) << 15) | tlen, -1)
    fs = frame_sums(buf, data, caplen, runs)
    keys = distinct(lay[cand]).tolist()
    for key in keys:
        # the rows of this layout: a slice when they are all the block's, else their indexes
        sel: slice | np.ndarray = slice(0, n) if len(keys) == 1 and cand.all() else np.flatnonzero(lay == key)
        r = rows if isinstance(sel, slice) else rows[sel]
        is6 = bool(key >> 16)
        u = 54 if is6 else 34
        e = u + 8 + (key & 0x7FFF)
        if e + 14 + 20 + 20 > H:
            continue
        itype = (r[:, e + 12].astype(np.int64) << 8) | r[:, e + 13]
        for inner6 in (False, True):
            th = e + 14 + (40 if inner6 else 20)
            if th + 20 > H:
                continue
            m = itype == (ETH_P_IPV6 if inner6 else ETH_P_IP)
            if not m.any():
                continue
            if m.all():
                s2, r2 = sel, r
            else:
                s2 = np.arange(n)[sel][m]
                r2 = r[m]
            _layout(c, r2, s2, L[s2], fs[s2], _shape(is6, bool(key & (1 << 15)), e, inner6))
    return c


def _port_in(dport: np.ndarray, ports) -> np.ndarray:
    """bool per frame: ``dport`` is one of ``ports`` (a few UDP ports)."""
    hit = np.zeros(len(dport), bool)
    for p in ports:
        hit |= dport == p
    return hit


#: the outer headers' fields (Ethernet, IPv4 or IPv6, UDP destination port, the tunnel header's first byte)
_OUTER = np.dtype(
    {
        "names": ["et", "b14", "tot4", "b20", "b21", "b23", "plen6", "dport4", "dport6", "g4", "g6"],
        "formats": [">u2", "u1", ">u2", "u1", "u1", "u1", ">u2", ">u2", ">u2", "u1", "u1"],
        "offsets": [12, 14, 16, 20, 21, 23, 18, 36, 56, 42, 62],
        "itemsize": H,
    }
)


class _Shape:
    """The fixed offsets and constant arrays of one header layout (``_shape``): outer IPv6 ``o6``, Geneve, inner
    Ethernet at ``e``, inner IPv6 ``i6``; UDP header at ``u``, inner IP at ``il3``, TCP at ``th``; ``dt``: the
    structured (big-endian) view of a row's fields; ``kv_mask``/``anon_mask``: the bytes ``kv``/``anon`` keep
    (0xFF) and zero (0); ``ps_o``/``ps_i``: where the outer/inner pseudo-header's addresses start; ``naddr``:
    inner address words; ``nopt``: option words read; ``opt_end``: the header end each option word needs."""

    __slots__ = (
        "o6",
        "geneve",
        "i6",
        "u",
        "il3",
        "th",
        "dt",
        "kv_mask",
        "anon_mask",
        "ps_o",
        "ps_i",
        "naddr",
        "nopt",
        "opt_end",
    )

    def __init__(self, o6: bool, geneve: bool, e: int, i6: bool) -> None:
        self.o6, self.geneve, self.i6 = o6, geneve, i6
        u = self.u = 54 if o6 else 34
        il3 = self.il3 = e + 14
        th = self.th = il3 + (40 if i6 else 20)
        f = {
            "ulen": (u + 4, ">u2"),
            "ucsum": (u + 6, ">u2"),
            "gproto": (u + 10, ">u2"),
            "ib0": (il3, "u1"),
            "doff": (th + 12, "u1"),
            "seq": (th + 4, ">u4"),
            "ack": (th + 8, ">u4"),
            "win": (th + 14, ">u2"),
            "ports": (th, ">u4"),
            "tflags": (th + 13, "u1"),
        }
        if i6:
            f.update(inh=(il3 + 6, "u1"), iplen=(il3 + 4, ">u2"))
            addr = range(il3 + 8, il3 + 40, 4)
        else:
            f.update(
                ifrag=(il3 + 6, ">u2"), iproto=(il3 + 9, "u1"), itot=(il3 + 2, ">u2"), iid=(il3 + 4, ">u2")
            )
            addr = range(il3 + 12, il3 + 20, 4)
        if not o6:
            f["oid"] = (18, ">u2")
        for k, o in enumerate(addr):
            f[f"a{k}"] = (o, ">u4")
        self.naddr = len(addr)
        self.nopt = min(10, (H - th - 20) // 4)
        self.opt_end = th + 24 + 4 * np.arange(self.nopt)
        self.dt = np.dtype(
            {
                "names": list(f),
                "formats": [v[1] for v in f.values()],
                "offsets": [v[0] for v in f.values()],
                "itemsize": H,
            }
        )
        self.ps_o = 22 if o6 else 26
        self.ps_i = il3 + (8 if i6 else 12)
        # kv: the varying fields, the options and whatever follows the TCP header zeroed; the length fields too
        # (the common layout has every one equal to what the frame's length gives: checked in ``_layout``)
        keep = np.full(H, 0xFF, np.uint8)
        zero = [(u + 6, u + 8), (th + 4, th + 12), (th + 14, th + 18), (th + 20, H)]
        if not o6:
            zero += [(18, 20), (24, 26)]
        if not i6:
            zero += [(il3 + 4, il3 + 6), (il3 + 10, il3 + 12)]
        lo = 18 if o6 else 16
        li = il3 + 4 if i6 else il3 + 2
        zero += [(lo, lo + 2), (u + 4, u + 6), (li, li + 2)]
        for a, b in zero:
            keep[a:b] = 0
        self.kv_mask = keep
        anon = keep.copy()
        for a, b in ((u, u + 2), (addr.start, addr.stop), (th, th + 4)):
            anon[a:b] = 0
        self.anon_mask = anon


_SHAPES: dict[tuple[bool, bool, int, bool], _Shape] = {}


def _shape(o6: bool, geneve: bool, e: int, i6: bool) -> _Shape:
    """The ``_Shape`` of a layout, made once."""
    k = (o6, geneve, e, i6)
    got = _SHAPES.get(k)
    if got is None:
        got = _SHAPES[k] = _Shape(o6, geneve, e, i6)
    return got


def _layout(c: Columns, r, sel, L, fs, sh: _Shape) -> None:
    """Fill ``c``'s rows ``sel`` (a slice: all of them, in order; else their indexes) for one layout (headers at
    ``sh``'s fixed offsets); ``r`` = their rows (C-contiguous uint8, (rows, H): ``c.kv`` itself when ``sel`` is a
    slice, else a copy). Fields are read through one structured (big-endian) view."""
    u, il3, th, i6 = sh.u, sh.il3, sh.th, sh.i6
    v = r.view(sh.dt)[:, 0]
    ulen = v["ulen"].astype(np.int64)
    ok = ulen == L - u
    if sh.geneve:
        ok &= v["gproto"] == ETH_P_TEB
    ib0 = v["ib0"]
    if i6:
        ok &= ((ib0 >> 4) == 6) & (v["inh"] == 6) & (v["iplen"].astype(np.int64) + 40 == L - il3)
    else:
        ok &= (ib0 == 0x45) & ((v["ifrag"] & 0x3FFF) == 0) & (v["iproto"] == 6)
        ok &= v["itot"].astype(np.int64) == L - il3
    doff = (v["doff"] >> 4).astype(np.int64)
    hend = th + doff * 4
    ok &= (doff >= 5) & (hend <= L) & (hend <= H)
    if not ok.all():
        sel = np.arange(len(c.common))[sel][ok] if isinstance(sel, slice) else sel[ok]
        r, v = r[ok], v[ok]
        L, fs, ulen, hend = L[ok], fs[ok], ulen[ok], hend[ok]
    k = len(r)
    if not k:
        return
    whole = isinstance(sel, slice)
    c.common[sel] = True

    # checksum verdicts, from sums of the header's 16-bit words: read little-endian (no byte swap), whose sum
    # times 256 equals the big-endian words' sum modulo 0xFFFF (packet/csum.py ``word_sums``); every use is
    # taken modulo it. The words are summed down the columns of a transposed copy (one vectorised add per
    # header word, instead of one short sum per frame). The headers a checksum subtracts from the frame's sum
    # ``fs`` end where its pseudo-header's addresses start: the words from there to the UDP / TCP header are
    # the pseudo-header's own, which it adds back
    wt = np.ascontiguousarray(r.view("<u2")[:, : th // 2].T)  # uint16: half the bytes of a wider copy
    ps_o, ps_i = sh.ps_o // 2, sh.ps_i // 2
    head_o = wt[:ps_o].sum(axis=0, dtype=np.int64)
    head_i = head_o + wt[ps_o:ps_i].sum(axis=0, dtype=np.int64)
    resid = c.resid[sel] if whole else np.zeros((k, 4), np.int64)
    if not sh.o6:
        resid[:, 0] = wt[7:17].sum(axis=0, dtype=np.int64) * 256 % _M
    resid[:, 1] = (17 + ulen + fs - head_o * 256) % _M
    if not i6:
        resid[:, 2] = wt[il3 // 2 : il3 // 2 + 10].sum(axis=0, dtype=np.int64) * 256 % _M
    resid[:, 3] = (6 + (L - th) + fs - head_i * 256) % _M
    ucsum = v["ucsum"]
    bad = resid != 0
    vb = np.where(ucsum == 0, V_UDP_ZERO, 0)
    vb |= np.where(bad[:, 0], V_OUTER_IP_BAD, 0)
    vb |= np.where((ucsum != 0) & bad[:, 1], V_UDP_BAD, 0)
    vb |= np.where(bad[:, 2], V_INNER_IP_BAD, 0)
    vb |= np.where(bad[:, 3], V_TCP_BAD, 0)
    c.vbits[sel] = vb
    if not whole:
        c.resid[sel] = resid

    # varying fields
    rel = c.rel[sel] if whole else np.zeros((k, len(FIELDS)), np.int64)
    rel[:, 0] = v["seq"]
    rel[:, 1] = v["ack"]
    rel[:, 2] = v["win"]
    if not sh.o6:
        rel[:, 3] = v["oid"]
    if not i6:
        rel[:, 4] = v["iid"]
    nopt = sh.nopt
    if nopt:  # option words within the header (hend), else 0
        opts = r[:, th + 20 : th + 20 + 4 * nopt].view(">u4")
        h0 = int(hend[0])
        if (hend == h0).all():  # one header length (a flow's segments): its words, the others stay 0
            within = int(np.count_nonzero(sh.opt_end <= h0))
            rel[:, 5 : 5 + within] = opts[:, :within]
        else:
            rel[:, 5 : 5 + nopt] = np.where(sh.opt_end <= hend[:, None], opts, 0)
    if not whole:
        c.rel[sel] = rel

    # group: inner addresses and ports (hash; a collision only merges groups)
    prime = np.uint64(0x100000001B3)
    gh = np.full(k, 0xCBF29CE484222325, np.uint64)
    for a in range(sh.naddr):
        gh = (gh ^ v[f"a{a}"].astype(np.uint64)) * prime
    c.group[sel] = (gh ^ v["ports"].astype(np.uint64)) * prime
    c.payload[sel] = L - hend
    tflags = v["tflags"]
    c.tflags[sel] = tflags
    # SYN (include/net/tcp.h TCPHDR_SYN) with options after the 20-byte header
    c.syn_l4[sel] = np.where((tflags & 0x02 != 0) & (hend > th + 20), th, 0)
    c.l4[sel] = th

    # kv: the varying fields, the options and whatever follows the TCP header zeroed (``_Shape.kv_mask``)
    np.bitwise_and(r, sh.kv_mask, out=r)  # c.kv itself, or a copy of its rows
    if not whole:
        c.kv[sel] = r
    c._anon_of.append((sel, sh.anon_mask))


def relative(rel: np.ndarray, base: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``rel`` with each row made relative to row ``base[i]`` (modulo each field's width; options: 2**32).

    ``out``: where to write the rows (any integer dtype of at least 32 bits, e.g. uint32 columns of a larger
    array; None: a new int64 array). Returns the rows written."""
    d = np.take(rel, base, axis=0)
    np.subtract(rel, d, out=d)
    np.bitwise_and(d, _WIDTH_MASKS, out=d)
    if out is not None:
        out[...] = d  # each masked field fits in 32 bits
    return d if out is None else out


_WIDTHS = np.array([_MOD.get(name, 1 << 32) for name in FIELDS], np.int64)
_WIDTH_MASKS = _WIDTHS - 1

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
``reduceat`` over the block's aligned 32-bit words for the others (``_word_sums``); a checksum is correct iff the
covered words, checksum included, sum to 0 modulo 0xFFFF (the kernel's ``csum_fold(...) == 0``; the pseudo-header is never all zero). tests/test_columns.py
checks every verdict against packet/csum.py.
"""

from __future__ import annotations

import numpy as np

#: bytes of each frame's headers kept in ``kv`` (IPv6 in IPv6 with 40 bytes of TCP options needs 184)
H = 192
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
    the outer UDP source port, the inner addresses and the TCP ports (sim/runs.py). ``syn_l4``: uint16, the inner
    TCP header's byte offset in a frame with SYN set and TCP options, else 0 (``--resegment auto`` learns a SYN's
    MSS option: sim/ingest.py ``Ingest._learn_mss``). ``tflags``: uint8, the inner TCP header's flags byte (byte 13:
    CWR ECE URG ACK PSH RST SYN FIN from the high bit; sim/runs.py cuts a flow's frames into pieces by it).
    """

    __slots__ = (
        "common",
        "kv",
        "rel",
        "vbits",
        "resid",
        "group",
        "payload",
        "anon",
        "syn_l4",
        "tflags",
        "_kvh",
    )
    common: np.ndarray
    kv: np.ndarray
    rel: np.ndarray
    vbits: np.ndarray
    resid: np.ndarray
    group: np.ndarray
    payload: np.ndarray
    anon: np.ndarray
    syn_l4: np.ndarray
    tflags: np.ndarray

    _kvh: np.ndarray | None

    def kv_hash(self) -> np.ndarray:
        if self._kvh is None:
            h = (self.kv.view(np.uint64) * _HASH_MULT).sum(axis=1, dtype=np.uint64)
            zero = ((self.vbits & V_UDP_ZERO) != 0).astype(np.uint64)
            self._kvh = h ^ (zero << np.uint64(63))
        return self._kvh


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
    runs = _runs(data, caplen)
    rows = _rows(buf, data, caplen, runs)
    L = caplen.astype(np.int64)
    c.common = np.zeros(n, bool)
    c.vbits = np.zeros(n, np.uint8)
    c.resid = np.zeros((n, 4), np.int64)
    c.rel = np.zeros((n, len(FIELDS)), np.int64)
    c.kv = rows  # rewritten in place, group by group
    c.group = np.zeros(n, np.uint64)
    c.payload = np.zeros(n, np.int64)
    c.anon = np.zeros((n, H), np.uint8)
    c.syn_l4 = np.zeros(n, np.uint16)
    c.tflags = np.zeros(n, np.uint8)
    c._kvh = None

    def be16(r, off):
        return (r[:, off].astype(np.int64) << 8) | r[:, off + 1]

    # outer layer, at fixed offsets: Ethernet, IPv4 (no options, not a fragment) or IPv6, UDP
    et = be16(rows, 12)
    o4 = (et == ETH_P_IP) & (rows[:, 14] == 0x45) & ((rows[:, 20] & 0x3F) == 0) & (rows[:, 21] == 0)
    o4 &= (rows[:, 23] == 17) & (be16(rows, 16) + 14 == L)
    o6 = (et == ETH_P_IPV6) & ((rows[:, 14] >> 4) == 6) & (rows[:, 20] == 17) & (be16(rows, 18) + 54 == L)
    dport = np.where(o6, be16(rows, 56), be16(rows, 36))
    vx = np.isin(dport, np.asarray(list(vxlan_ports) or [-1]))
    gn = np.isin(dport, np.asarray(list(geneve_ports) or [-1]))
    # tunnel header length (Geneve: 8 + options), which places the inner frame
    gbyte = np.where(o6, rows[:, 62], rows[:, 42]).astype(np.int64)
    tlen = np.where(vx, 8, 8 + (gbyte & 0x3F) * 4)
    cand = (o4 | o6) & (vx | gn)
    if not cand.any():
        return c
    lay = np.where(cand, (o6.astype(np.int64) << 16) | (gn.astype(np.int64) << 15) | tlen, -1)
    fs = _frame_sums(buf, data, caplen, runs)
    for key in np.unique(lay[cand]).tolist():
        sel = np.flatnonzero(lay == key)
        whole = len(sel) == n
        r = rows if whole else rows[sel]
        is6 = bool(key >> 16)
        u = 54 if is6 else 34
        e = u + 8 + (key & 0x7FFF)
        if e + 14 + 20 + 20 > H:
            continue
        itype = be16(r, e + 12)
        for inner6 in (False, True):
            il3 = e + 14
            th = il3 + (40 if inner6 else 20)
            if th + 20 > H:
                continue
            m = itype == (ETH_P_IPV6 if inner6 else ETH_P_IP)
            if not m.any():
                continue
            s2 = sel[m] if not m.all() else sel
            r2 = r if s2 is sel else r[m]
            _layout(c, r2, s2, L[s2], fs[s2], is6, bool(key & (1 << 15)), u, e, inner6, il3, th)
    return c


def _layout(c: Columns, r, sel, L, fs, o6: bool, geneve: bool, u: int, e: int, i6: bool, il3: int, th: int):
    """Fill ``c``'s rows ``sel`` for one layout (headers at the given fixed offsets); ``r`` = their rows
    (C-contiguous uint8, (len(sel), H)). Fields are read through one structured (big-endian) view."""
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
    }
    if i6:
        f.update(inh=(il3 + 6, "u1"), iplen=(il3 + 4, ">u2"))
        addr = range(il3 + 8, il3 + 40, 4)
    else:
        f.update(ifrag=(il3 + 6, ">u2"), iproto=(il3 + 9, "u1"), itot=(il3 + 2, ">u2"), iid=(il3 + 4, ">u2"))
        addr = range(il3 + 12, il3 + 20, 4)
    if not o6:
        f["oid"] = (18, ">u2")
    for k, o in enumerate(addr):
        f[f"a{k}"] = (o, ">u4")
    nopt = min(10, (H - th - 20) // 4)
    for k in range(nopt):
        f[f"o{k}"] = (th + 20 + 4 * k, ">u4")
    dt = np.dtype(
        {
            "names": list(f),
            "formats": [v[1] for v in f.values()],
            "offsets": [v[0] for v in f.values()],
            "itemsize": H,
        }
    )
    v = r.view(dt)[:, 0]

    def g(name):
        return v[name].astype(np.int64)

    ulen = g("ulen")
    ok = ulen == L - u
    if geneve:
        ok &= g("gproto") == ETH_P_TEB
    ib0 = v["ib0"]
    if i6:
        ok &= ((ib0 >> 4) == 6) & (v["inh"] == 6) & (g("iplen") + 40 == L - il3)
    else:
        ok &= (ib0 == 0x45) & ((v["ifrag"] & 0x3FFF) == 0) & (v["iproto"] == 6) & (g("itot") == L - il3)
    doff = (v["doff"] >> 4).astype(np.int64)
    hend = th + doff * 4
    ok &= (doff >= 5) & (hend <= L) & (hend <= H)
    if not ok.all():
        sel, r, v = sel[ok], r[ok], v[ok]
        L, fs, ulen, hend = L[ok], fs[ok], ulen[ok], hend[ok]
    if not len(sel):
        return
    c.common[sel] = True

    # checksum verdicts, from sums of the header's 16-bit words: read little-endian (a view, no byte swap), whose
    # sum times 256 equals the big-endian words' sum modulo 0xFFFF (``_word_sums``); every use is taken modulo it
    words = r.view("<u2")

    def wsum(a, b):
        """The sum of the big-endian 16-bit words of bytes [a, b) modulo 0xFFFF, up to a multiple of 0xFFFF (even
        offsets, b ≤ th)."""
        return words[:, a // 2 : b // 2].sum(axis=1, dtype=np.int64) * 256

    ucsum = g("ucsum")
    resid = np.zeros((len(sel), 4), np.int64)
    if not o6:
        resid[:, 0] = wsum(14, 34) % _M
        o_pseudo = wsum(26, 34)
    else:
        o_pseudo = wsum(22, 54)
    resid[:, 1] = (o_pseudo + 17 + ulen + fs - wsum(0, u)) % _M
    if not i6:
        resid[:, 2] = wsum(il3, il3 + 20) % _M
        i_pseudo = wsum(il3 + 12, il3 + 20)
    else:
        i_pseudo = wsum(il3 + 8, il3 + 40)
    resid[:, 3] = (i_pseudo + 6 + (L - th) + fs - wsum(0, th)) % _M
    vb = np.where(ucsum == 0, V_UDP_ZERO, 0)
    vb |= np.where(resid[:, 0] != 0, V_OUTER_IP_BAD, 0)
    vb |= np.where((ucsum != 0) & (resid[:, 1] != 0), V_UDP_BAD, 0)
    vb |= np.where(resid[:, 2] != 0, V_INNER_IP_BAD, 0)
    vb |= np.where(resid[:, 3] != 0, V_TCP_BAD, 0)
    c.vbits[sel] = vb
    c.resid[sel] = resid

    # varying fields
    rel = np.zeros((len(sel), len(FIELDS)), np.int64)
    rel[:, 0] = v["seq"]
    rel[:, 1] = v["ack"]
    rel[:, 2] = v["win"]
    if not o6:
        rel[:, 3] = v["oid"]
    if not i6:
        rel[:, 4] = v["iid"]
    if nopt:  # option words within the header (hend), else 0
        opts = r[:, th + 20 : th + 20 + 4 * nopt].view(">u4")
        rel[:, 5 : 5 + nopt] = np.where(th + 24 + 4 * np.arange(nopt) <= hend[:, None], opts, 0)
    c.rel[sel] = rel

    # group: inner addresses and ports (hash; a collision only merges groups)
    prime = np.uint64(0x100000001B3)
    gh = np.full(len(sel), 0xCBF29CE484222325, np.uint64)
    for k in range(len(addr)):
        gh = (gh ^ v[f"a{k}"].astype(np.uint64)) * prime
    c.group[sel] = (gh ^ v["ports"].astype(np.uint64)) * prime
    c.payload[sel] = L - hend
    c.tflags[sel] = r[:, th + 13]
    # SYN (include/net/tcp.h TCPHDR_SYN) with options after the 20-byte header
    c.syn_l4[sel] = np.where((r[:, th + 13] & 0x02 != 0) & (hend > th + 20), th, 0)

    # kv: zero the varying fields, the options and whatever follows the TCP header
    kv = r  # c.kv itself, or a copy of its rows
    if not o6:
        kv[:, 18:20] = 0
        kv[:, 24:26] = 0
    kv[:, u + 6 : u + 8] = 0
    if not i6:
        kv[:, il3 + 4 : il3 + 6] = 0
        kv[:, il3 + 10 : il3 + 12] = 0
    # the length fields: the common layout has every one equal to what the frame's length gives (checked above)
    lo = 18 if o6 else 16
    kv[:, lo : lo + 2] = 0
    kv[:, u + 4 : u + 6] = 0
    li = il3 + 4 if i6 else il3 + 2
    kv[:, li : li + 2] = 0
    kv[:, th + 4 : th + 12] = 0
    kv[:, th + 14 : th + 18] = 0
    kv[:, th + 20 :] = 0
    if kv is not c.kv:
        c.kv[sel] = kv
    anon = kv.copy()
    anon[:, u : u + 2] = 0
    anon[:, addr.start : addr.stop] = 0
    anon[:, th : th + 4] = 0
    c.anon[sel] = anon


def relative(rel: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``rel`` with each row made relative to row ``base[i]`` (modulo each field's width; options: 2**32)."""
    return (rel - rel[base]) % _WIDTHS


_WIDTHS = np.array([_MOD.get(name, 1 << 32) for name in FIELDS], np.int64)


def _runs(data: np.ndarray, caplen: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Runs ``(first, end, caplen, stride)`` of at least 8 consecutive records with equal caplen, which lie at a
    fixed stride in the block (pcap: record header + caplen; pcapng: the enhanced packet block's length)."""
    n = len(data)
    if not n:
        return []
    brk = np.flatnonzero(np.diff(caplen)) + 1
    out = []
    for s, e in zip(np.concatenate(([0], brk)).tolist(), np.concatenate((brk, [n])).tolist(), strict=True):
        if e - s < 8:
            continue
        clen = int(caplen[s])
        stride = int(data[s + 1] - data[s])
        if stride >= clen and (np.diff(data[s:e]) == stride).all():
            out.append((s, e, clen, stride))
    return out


def _rows(buf: bytes, data: np.ndarray, caplen: np.ndarray, runs) -> np.ndarray:
    """The first H bytes of each frame as an (n, H) uint8 array, zero past the frame's end."""
    n = len(data)
    a = np.frombuffer(buf, dtype=np.uint8)
    rows = np.zeros((n, H), np.uint8)
    done = np.zeros(n, bool)
    for s, e, clen, stride in runs:
        w = min(H, clen)
        if int(data[e - 1]) + w > len(buf):
            continue
        rows[s:e, :w] = np.lib.stride_tricks.as_strided(
            a[int(data[s]) :], shape=(e - s, w), strides=(stride, 1)
        )
        done[s:e] = True
    rest = np.flatnonzero(~done)
    if len(rest) and len(a) >= H:
        # the others: each frame's H bytes from a window view of the block (one gather), then zeroed past its end;
        # frames that start less than H bytes before the block's end are cut by hand below
        inside = rest[data[rest] <= len(a) - H]
        rows[inside] = np.lib.stride_tricks.sliding_window_view(a, H)[data[inside]]
        short = inside[caplen[inside] < H]
        rows[short] *= np.arange(H) < caplen[short, None]
        rest = rest[data[rest] > len(a) - H]
    if len(rest):
        lim = np.minimum(caplen[rest], H).tolist()
        parts = [buf[o : o + k].ljust(H, b"\0") for o, k in zip(data[rest].tolist(), lim, strict=True)]
        rows[rest] = np.frombuffer(b"".join(parts), dtype=np.uint8).reshape(len(rest), H)
    return rows


def _frame_sums(buf: bytes, data: np.ndarray, caplen: np.ndarray, runs) -> np.ndarray:
    """Ones' complement sum (mod 0xFFFF, big-endian 16-bit words, odd tail padded) of each whole frame."""
    n = len(data)
    out = np.zeros(n, np.int64)
    a = np.frombuffer(buf, dtype=np.uint8)
    done = np.zeros(n, bool)
    for s, e, clen, stride in runs:
        c4 = clen & ~3
        base = int(data[s])
        view = np.lib.stride_tricks.as_strided(a[base:], shape=(e - s, c4), strides=(stride, 1))
        le = view.view("<u4").sum(axis=1, dtype=np.uint64).astype(np.int64)
        for k in range(c4, clen):  # tail bytes: little-endian weights 1, 256 for positions 0, 1 (mod 2)
            le += a[base + k :: stride][: e - s].astype(np.int64) * (256 if k & 1 else 1)
        out[s:e] = ((le % _M) * 256) % _M  # little-endian sums are byte-swapped: ×256 swaps modulo 0xFFFF
        done[s:e] = True
    rest = np.flatnonzero(~done)
    if len(rest):
        out[rest] = _word_sums(buf, data[rest], caplen[rest])
    return out


def _word_sums(buf: bytes, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The sums modulo 0xFFFF of the big-endian 16-bit words of ``buf[start:start + length]`` (an odd last byte is
    a word's high byte), for frames in increasing, non-overlapping order (int64 per frame).

    One ``reduceat`` over the block read as little-endian 32-bit words (native, no byte swap, half as many
    elements as 16-bit words) sums each frame's whole aligned words; its at most 3 leading and 3 trailing bytes
    are added one by one. A byte at buffer offset ``a`` then weighs ``256 ** (a % 4)``, which is ``256 ** (a %
    2)`` modulo 0xFFFF (``256 ** 2 = 65536 ≡ 1``): the frame's own big-endian weight when it starts at an odd
    offset, that weight times 256 (a byte swap) when it starts at an even one (``_frame_sums``' equal-length runs
    are summed the same way)."""
    a = np.frombuffer(buf, dtype=np.uint8)
    start = start.astype(np.int64)
    end = start + length.astype(np.int64)
    out = np.zeros(len(start), np.int64)
    if not len(start):
        return out
    lo = np.minimum((start + 3) & ~3, end)  # the first whole aligned word (or the frame's end)
    hi = np.maximum(end & ~3, lo)  # after the last one
    w4 = a[: len(a) // 4 * 4].view("<u4")
    nw = len(w4)
    words = hi > lo
    if nw:
        idx = np.empty(2 * len(start), np.int64)
        idx[0::2] = np.minimum(lo // 4, nw - 1)
        idx[1::2] = np.minimum(hi // 4, nw - 1)  # reduceat sums idx[2i]..idx[2i + 1] - 1
        out = np.add.reduceat(w4, idx, dtype=np.uint64)[0::2].astype(np.int64)
        out[~words] = 0
        # a frame whose words end with the block's last word: its index was clipped to that word's (reduceat
        # then sums up to it, or returns that one word alone when it is also the frame's first)
        out[words & (hi // 4 == nw) & (lo // 4 < nw - 1)] += int(w4[-1])
    for k in range(3):
        for p, stop in ((start + k, lo), (hi + k, end)):
            m = p < stop
            out[m] += a[p[m]].astype(np.int64) << (8 * (p[m] & 1))
    out %= _M
    even = (start & 1) == 0
    out[even] = out[even] * 256 % _M
    return out

"""A pipe's interface notes on the batch path: ``Selection.filter``'s counting, a block of records at a time.

A pipe is read once, so its interfaces are not planned: every one is replayed (without ``--interface``), and
``Selection.filter`` counts, record by record as the frame-by-frame path reads them, each interface's frames and
tunnel frames, and keeps the hashes of the payloads that tell the decapsulated copies at the end of the stream
(``_count_copies``). The batch path (pollcache.py) reads a pcapng stream in blocks (``PcapngChunks``);
``BlockTally.block`` counts the same things for the records of a block once the batch path has counted them:
the same keys (``interface_key``: the pcapng interface over all sections, a Linux cooked v2 ifindex), in the same
first-frame order, the same hashes (``_payload``), the same tunnel frames.

A frame of the batch path's common layout (packet/columns.py: VXLAN/Geneve, inner TCP, every length exact) is a
tunnel frame the replay counts as one (``BatchReplay._account``: the class of its flow, whose key is a tunnel
key, packet/decode.py). Frames with the same ``kv`` row have the same headers up to the end of the TCP header but
for the per-segment fields, so ``Decoder.decode`` finds the same inner L4 offset in each: it decodes one frame of
each row and the others' payloads are hashed at that offset, without a decode each. Every other record is read
as ``Selection.filter`` reads it (``_payload``); the replay counts it as tunnel traffic exactly when ``_payload``
finds a tunnel flow (the class of a flow is the kind of its key; a record the replay skips — cut short,
unsupported link layer, malformed — has no payload). tests/test_pcapng_stream_batch.py compares whole documents
with the frame-by-frame path's.
"""

from __future__ import annotations

import numpy as np

from .interfaces import Selection, _keep_payload, _l4_of, _new_stats, _payload
from .reader import DLT_LINUX_SLL2


class BlockTally:
    """``Selection.filter``'s counts for a pipe whose interfaces are all replayed, a block at a time.

    ``block(chunk, col, common, upto)`` after the batch path counted records ``[0, upto)`` of a
    ``capture.chunks.RecordChunk`` of a pcapng stream (``col``: their ``packet.columns.Columns``; ``common``: bool
    per record, replayed as the common layout); ``end()`` after the last block. Memory: 8 bytes (an int64 hash) per
    tunnel frame and a hash per other frame with an L4 header (the copies are counted at the end of the stream).
    """

    def __init__(self, sel: Selection, cap) -> None:
        self.sel = sel
        self.cap = cap
        factory = sel.decoder_factory
        if factory is None:  # interfaces.plan sets one for every pipe
            raise ValueError("BlockTally counts a pipe's interfaces: its Selection needs a decoder factory")
        self.dec = factory()
        self.inner: dict[tuple, list[np.ndarray]] = {}  # key → int64 arrays of tunnel frames' payload hashes
        self.plain: dict[tuple, list] = {}

    def block(self, ch, col, common: np.ndarray, upto: int) -> None:
        if upto <= 0:
            return
        assert ch.iface is not None and ch.linktype is not None  # a pcapng block
        keys, key_of = self._keys(ch, upto)
        by_key = self.sel.by_key
        fast, l4 = self._common_l4(ch, col, common[:upto])
        data, caplen = ch.data, ch.caplen
        inner = self.inner
        if len(fast):
            starts = (data[fast] + l4).tolist()
            ends = (data[fast] + caplen[fast]).tolist()
            with memoryview(ch.buf) as mv:
                hashes = [hash(mv[a:b].tobytes()) for a, b in zip(starts, ends, strict=True)]
            kf = key_of[fast]
            for j in np.unique(kf).tolist():
                key = keys[j]
                mine = (
                    hashes
                    if len(keys) == 1
                    else [h for h, k in zip(hashes, kf.tolist(), strict=True) if k == j]
                )
                inner.setdefault(key, []).append(np.array(mine, np.int64))
                by_key[key].tunnel_frames += len(mine)
        rest = np.ones(upto, bool)
        rest[fast] = False
        buf, dec = ch.buf, self.dec
        sets: dict[tuple, set] = {}
        for q in np.flatnonzero(rest).tolist():
            o, n = int(data[q]), int(caplen[q])
            key = keys[int(key_of[q])]
            got = _payload(dec, bytes(buf[o : o + n]), int(ch.origlen[q]), int(ch.linktype[q]))
            _keep_payload(got, key, sets, self.plain)
            by_key[key].tunnel_frames += got is not None and got[0]
        for key, hs in sets.items():
            inner.setdefault(key, []).append(np.fromiter(hs, np.int64, len(hs)))

    def end(self) -> None:
        """After the last block: ``Selection.stream_end`` (labels, copies)."""
        inner = {k: np.concatenate(v) for k, v in self.inner.items()}
        self.sel.stream_end(self.cap, inner, self.plain, True)

    def _keys(self, ch, upto: int) -> tuple[list[tuple], np.ndarray]:
        """The interface keys of records ``[0, upto)`` (``interface_key``), new ones added to ``Selection.by_key``
        in order of first frame with their frames counted; returns the block's keys and each record's index in
        them."""
        lt = ch.linktype[:upto]
        ifx = np.full(upto, -1, np.int64)
        s2 = np.flatnonzero((lt == DLT_LINUX_SLL2) & (ch.caplen[:upto] >= 8))
        if len(s2):  # LINUX_SLL2 header bytes 4..8: the interface index (big-endian)
            b = np.frombuffer(ch.buf, np.uint8)
            o = ch.data[s2] + 4
            ifx[s2] = (
                (b[o].astype(np.int64) << 24)
                | (b[o + 1].astype(np.int64) << 16)
                | (b[o + 2].astype(np.int64) << 8)
            ) | b[o + 3]
            del b
        code = (ch.iface[:upto].astype(np.int64) << 33) | (ifx + 1)
        uniq, first, inv, counts = np.unique(code, return_index=True, return_inverse=True, return_counts=True)
        keys: list[tuple] = []
        by_key = self.sel.by_key
        for j in range(len(uniq)):
            g, x = int(uniq[j] >> 33), int(uniq[j] & ((1 << 33) - 1)) - 1
            keys.append((g, None if x < 0 else x))
        for j in np.argsort(first, kind="stable").tolist():
            key = keys[j]
            st = by_key.get(key)
            if st is None:
                st = by_key[key] = _new_stats(self.cap, key, int(lt[first[j]]))
            st.frames += int(counts[j])
        return keys, inv.reshape(-1)

    def _common_l4(self, ch, col, common: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The records of the common layout whose payload is hashed at their ``kv`` row's L4 offset, and those
        offsets; the others (a row whose frame did not decode as tunnel traffic with an L4 header, hash
        collisions of ``kv`` rows) are read one by one."""
        pos = np.flatnonzero(common)
        z = np.zeros(0, np.int64)
        if not len(pos):
            return z, z
        _u, first, inv = np.unique(col.kv_hash()[pos], return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        reps = pos[first]
        kv64 = col.kv.view(np.uint64)
        same = (kv64[pos] == kv64[reps[inv]]).all(axis=1)
        l4_of = np.zeros(len(first), np.int64)
        buf = ch.buf
        for j, r in enumerate(reps.tolist()):
            o, n = int(ch.data[r]), int(ch.caplen[r])
            got = _l4_of(self.dec, bytes(buf[o : o + n]), int(ch.origlen[r]), int(ch.linktype[r]))
            if got is not None and got[0]:
                l4_of[j] = got[2]
        l4 = l4_of[inv]
        ok = same & (l4 > 0)
        return pos[ok], l4[ok]


def block_tally(sel: Selection, cap) -> BlockTally | None:
    """A ``BlockTally`` when ``sel`` counts as it reads (a pipe: nothing planned, ``Selection.filter`` would count
    each record's interface), else None."""
    if sel.planned or sel.decoder_factory is None:
        return None
    return BlockTally(sel, cap)

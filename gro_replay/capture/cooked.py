"""Linux cooked records (``tcpdump -i any``: LINUX_SLL, LINUX_SLL2) as the batch path reads them: each block's
cooked records that the replay receives rewritten as the Ethernet frames ``l2_normalize`` makes of them, so that
they are frames of the common layout (packet/columns.py ``analyse``), keyed, cached and composed as an Ethernet
capture's are, instead of decoded one by one.

The rule stays ``linktypes.l2_normalize`` and ``linktypes.sent_by_host`` (what ``sim/skipped.py received_frame``
applies to each record on the frame-by-frame path): both read the cooked header alone (packet type, ARPHRD type,
link address and its length, protocol), never the bytes after it, so they are asked once per distinct header of
the block and their answer is written into every record with that header. The Ethernet header (14 bytes) is
written over the last 14 bytes of the cooked header (16 or 20 bytes) in a copy of the block (the reader's buffer
is the digest's and the next block's: capture/stream.py ``DigestingRaw.lend``, chunks.py ``PcapChunks``), and
the record's frame starts there: its captured and wire lengths lose the difference (2 or 6 bytes), which
``RecordChunk.shrunk`` keeps (the bytes read are the record's: ``InputStats.bytes_read``).

A record stays cooked, for the frame-by-frame decode of the batch path (pollcache.py ``_chunk``'s unusual
records, counted there by ``received_frame``), when the replay does not take it as it is: cut short (its captured
length below its wire length: ``snaplen_cut``), of a header ``l2_normalize`` refuses (``unsupported_link_layer``),
or not a frame of the common layout once rewritten (``as_ethernet`` puts those back). A record the capturing host
sent (``outgoing``; its packet type read even from a header cut short) stays cooked and is marked
(``RecordChunk.sent``): the batch path counts it as read, as a record cut short is, and its time orders nothing
(``sim/skipped.py received_frame``: no receive path saw it). The records of other interfaces are rewritten too
(capture/interface_chunks.py selects after rewriting), and skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from ..packet.columns import analyse
from .chunks import REC_LEN, RecordChunk
from .linktypes import DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, LINK_HEADER_LEN, l2_normalize, sent_by_host

#: the Linux cooked headers' lengths (bytes): LINUX_SLL (v1) 16, LINUX_SLL2 20
COOKED_HEADER_LEN = {lt: LINK_HEADER_LEN[lt] for lt in (DLT_LINUX_SLL, DLT_LINUX_SLL2)}
_ETH_HLEN = LINK_HEADER_LEN[DLT_EN10MB]
_ETH_AT = np.arange(_ETH_HLEN)


def _eth_headers(heads: np.ndarray, linktype: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the replay makes of each cooked header row of ``heads`` (uint8, (records, header length)), asked once
    per distinct row: ``(sent, ok, eth)``, ``sent`` True where ``sent_by_host`` (``outgoing``), ``ok`` where
    ``l2_normalize`` gives a frame of a record the host did not send, ``eth`` (uint8, (records, 14)) its Ethernet
    header there, zeros elsewhere."""
    hl = heads.shape[1]
    rows = np.ascontiguousarray(heads).view(np.dtype((np.void, hl)))[:, 0]
    uniq, inv = np.unique(rows, return_inverse=True)
    sent = np.zeros(len(uniq), bool)
    ok = np.zeros(len(uniq), bool)
    eth = np.zeros((len(uniq), _ETH_HLEN), np.uint8)
    for u, h in enumerate(uniq.tolist()):
        sent[u] = sent_by_host(h, linktype)
        frame = None if sent[u] else l2_normalize(h, linktype)
        if frame is not None:  # the header alone: 14 bytes of Ethernet header, no payload
            ok[u] = True
            eth[u] = np.frombuffer(frame, np.uint8)
    inv = inv.reshape(-1)
    return sent[inv], ok[inv], eth[inv]


def as_ethernet(
    ch: RecordChunk, vxlan_ports: Iterable[int], geneve_ports: Iterable[int], limit: int | None = None
) -> RecordChunk:
    """``ch`` with its Linux cooked records that the replay receives as they are rewritten as Ethernet frames (the
    module docstring), in a new ``RecordChunk`` over a copy of the block, with its columns
    (``RecordChunk.columns``: packet/columns.py ``analyse`` of the rewritten block, ``vxlan_ports``/
    ``geneve_ports`` the tunnel sockets' UDP ports) and ``shrunk`` set; the records keep their places and
    ``record_start`` its answers (``starts``: where each record's header lies in the reader's buffer). A frame
    longer than ``limit`` (bytes: ``--resegment``'s, which the batch path decodes one by one) stays cooked too.
    The cooked records the capturing host sent are marked (``RecordChunk.sent``: counted ``outgoing`` as read,
    their times no arrivals). ``ch`` itself (unchanged) when it holds no such record. Never raises on record
    content."""
    lt = ch.linktype
    if lt is None or not np.isin(lt, list(COOKED_HEADER_LEN)).any():
        return ch
    a = np.frombuffer(ch.buf, np.uint8, count=ch.end)
    sent = np.zeros(len(ch), bool)
    picked = []  # (records, their Ethernet headers, header length)
    for linktype, hl in COOKED_HEADER_LEN.items():
        cooked = lt == linktype  # every interface's (selected after: capture/interface_chunks.py)
        # a record cut within its cooked header: what its packet type says (``sent_by_host`` reads it from a
        # part), one by one (such records are rare); it is not rewritten
        for r in np.flatnonzero(cooked & (ch.caplen < hl)).tolist():
            o = int(ch.data[r])
            sent[r] = sent_by_host(bytes(ch.buf[o : o + int(ch.caplen[r])]), linktype)
        # the header whole (a record cut after it: snaplen_cut)
        idx = np.flatnonzero(cooked & (ch.caplen >= hl))
        if not len(idx):
            continue
        by_host, ok, eth = _eth_headers(a[ch.data[idx][:, None] + np.arange(hl)], linktype)
        sent[idx[by_host]] = True
        ok &= (ch.caplen[idx] >= ch.origlen[idx]) & (ch.origlen[idx] >= hl)
        if ok.any():
            picked.append((idx[ok], eth[ok], hl))
    if not picked:
        return replace(ch, sent=sent) if sent.any() else ch
    buf = bytearray(ch.buf[: ch.end])
    out = np.frombuffer(buf, np.uint8)
    data, caplen, origlen, linktype = ch.data.copy(), ch.caplen.copy(), ch.origlen.copy(), lt.copy()
    shrunk = np.zeros(len(ch), np.int64)
    for idx, eth, hl in picked:
        at = ch.data[idx] + (hl - _ETH_HLEN)
        out[at[:, None] + _ETH_AT] = eth
        data[idx] = at
        caplen[idx] -= hl - _ETH_HLEN
        origlen[idx] -= hl - _ETH_HLEN
        linktype[idx] = DLT_EN10MB
        shrunk[idx] = hl - _ETH_HLEN
    col = analyse(buf, data, caplen, vxlan_ports, geneve_ports)
    # a rewritten record that is not a frame of the common layout (or one to resegment) is decoded one by one, as
    # read: put back
    back = np.flatnonzero((shrunk > 0) & (~col.common if limit is None else ~col.common | (caplen > limit)))
    if len(back):
        head = data[back][:, None] + _ETH_AT  # the bytes the Ethernet header was written over
        out[head] = a[head]
        data[back], caplen[back], origlen[back] = ch.data[back], ch.caplen[back], ch.origlen[back]
        linktype[back] = lt[back]
        shrunk[back] = 0
    starts = ch.starts if ch.starts is not None else ch.data - REC_LEN
    return replace(
        ch,
        buf=buf,
        data=data,
        caplen=caplen,
        origlen=origlen,
        linktype=linktype,
        starts=starts,
        columns=col,
        shrunk=shrunk,
        sent=sent if sent.any() else None,
    )

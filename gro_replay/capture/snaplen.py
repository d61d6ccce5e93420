"""Records longer than the snapshot length (snaplen) their capture declares for them, counted by the record readers.

A classic pcap file header declares one snaplen for the file, a pcapng interface description block one per
interface (draft-ietf-opsawg-pcap, File Header: SnapLen, "the maximum number of octets captured from each packet";
draft-ietf-opsawg-pcapng, Interface Description Block: SnapLen, 0 meaning no limit; a pcap snaplen of 0 is taken
as no limit too). A record that holds more is readable, and is read as captured (its bytes are all there;
Wireshark flags it, ``pcap.capt_len_larger_than_snap_len``, and editcap 4.0 copies it whole), but libpcap does not
take it whole (checked with libpcap 1.10.3, tcpdump 4.99.3): it cuts a pcap record to the declared snaplen as it
reads it, so a copy through ``tcpdump -r IN -w OUT`` holds the frame cut short; in pcapng it refuses an enhanced
packet block ("invalid packet capture length N, bigger than snaplen of S"), which ends tcpdump's reading there, and
cuts a simple packet block (sim/notes.py ``over_snaplen_text`` says so).

Counted where each record's header is read, once per complete record, by the reader that reads it: reader.py
``Capture._iter_pcap`` (classic pcap, frame-by-frame path), chunks.py ``PcapChunks`` (classic pcap, batch path),
pcapng_chunks.py ``PcapngChunks`` (every pcapng record, both paths): every record of the capture, whichever
interfaces, ``-f`` or ``--flow`` replay. sim/notes.py ``account_capture_end`` hands the count to the input
accounting (JSON ``input.caplen_over_snaplen``).
"""

from __future__ import annotations

import numpy as np

from ..numeric import distinct


class CaplenOverSnaplen:
    """Records whose captured length exceeds the snaplen declared for them: by declared snaplen (bytes), the number
    of records and the longest captured length among them (bytes). A snaplen of 0 declares no limit."""

    def __init__(self) -> None:
        #: declared snaplen (bytes) → [records, longest captured length (bytes)]
        self.by_snaplen: dict[int, list[int]] = {}

    def add(self, snaplen: int, caplen: int) -> None:
        """One record of ``caplen`` bytes whose interface declares ``snaplen`` bytes: counted when it holds more
        (a snaplen of 0 declares no limit)."""
        if snaplen and caplen > snaplen:
            got = self.by_snaplen.setdefault(snaplen, [0, 0])
            got[0] += 1
            got[1] = max(got[1], caplen)

    def add_records(self, snaplen: np.ndarray | int, caplen: np.ndarray) -> None:
        """``add`` for each record of a block: ``caplen`` (bytes) an array with one entry per record, ``snaplen``
        (bytes) the one declared for each record's interface (an array like it) or for all of them (an int)."""
        snaplen = np.broadcast_to(snaplen, caplen.shape)
        over = np.flatnonzero((snaplen != 0) & (caplen > snaplen))
        if not len(over):
            return
        snap, cap = snaplen[over], caplen[over]
        for s in distinct(snap).tolist():
            mine = cap[snap == s]
            got = self.by_snaplen.setdefault(s, [0, 0])
            got[0] += len(mine)
            got[1] = max(got[1], int(mine.max()))

    def as_list(self) -> list[dict[str, int]]:
        """``[{"snaplen", "records", "longest"}, …]``, one entry per declared snaplen that records exceed, by
        snaplen ascending (bytes; ``longest``: the longest captured length among them); [] when none does."""
        return [
            {"snaplen": s, "records": n, "longest": longest}
            for s, (n, longest) in sorted(self.by_snaplen.items())
        ]

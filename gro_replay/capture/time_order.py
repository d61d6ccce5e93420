"""Records timestamped before a record read before them: a capture not in time order (two files joined with
``mergecap -a``, a clock step, several interfaces' clocks in one pcapng), counted by the record readers.

Counted where each record's header is read, once per complete record, as capture/snaplen.py counts its records:
reader.py ``Capture._iter_pcap`` (classic pcap, frame-by-frame path), chunks.py ``PcapChunks`` (classic pcap,
batch path), pcapng_chunks.py ``PcapngChunks`` (every pcapng record with a timestamp, both paths): every record of
the file. A capture that may hold several interfaces is counted again where its records are handed to the replay,
the replayed interfaces' only (capture/interfaces.py ``Selection.filter``/``_planned``, capture/interface_chunks.py
``SelectedChunks``): another interface's records, skipped, are no part of what the replay reads, and their clock
says nothing about the replayed one's. sim/notes.py ``account_capture_end`` says the replayed records' count in a
note: the simulation takes a frame that goes back in time as arriving at the latest time seen (sim/polls.py), so no
poll goes back in time.
"""

from __future__ import annotations

import numpy as np


class TimeOrder:
    """How many records were timestamped before the latest timestamp read before them, and by how much at most
    (ns)."""

    def __init__(self) -> None:
        self.behind = 0
        #: the largest step back (ns): the latest timestamp before a record less the record's
        self.largest_step_back_ns = 0
        self._latest: int | None = None

    def add(self, ts_ns: int) -> None:
        """One record of timestamp ``ts_ns`` (ns)."""
        latest = self._latest
        if latest is None or ts_ns >= latest:
            self._latest = ts_ns
            return
        self.behind += 1
        self.largest_step_back_ns = max(self.largest_step_back_ns, latest - ts_ns)

    def add_records(self, ts_ns: np.ndarray) -> None:
        """``add`` for each record of a block, in file order (``ts_ns``: int64 ns, one entry per record)."""
        if not len(ts_ns):
            return
        first = int(ts_ns[0]) if self._latest is None else self._latest
        before = np.maximum.accumulate(np.concatenate(([first], ts_ns[:-1])))  # the latest before each record
        back = before - ts_ns
        n = int(np.count_nonzero(back > 0))
        if n:
            self.behind += n
            self.largest_step_back_ns = max(self.largest_step_back_ns, int(back.max()))
        self._latest = max(int(before[-1]), int(ts_ns[-1]))

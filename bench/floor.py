"""The floor of a replay (issue 12): what every run of a capture costs before the first GRO decision.

Run as its own process by ``bench/modes.py`` and measured like a replay (user + system CPU of the child, the
interpreter's start included): start the interpreter, import numpy, open the capture as the replay does (its
BLAKE3 digest thread included: ``capture/reader.py open_capture``), read every block and walk its records
(``capture/chunks.py PcapChunks``, the batch engine's reader) and take the ones' complement sum of every frame's
bytes (``packet/csum.py frame_sums``, which the checksum verdicts of the NIC models and of
``__skb_gro_checksum_validate`` come from). No flow, key, poll or kernel model is built.

A replay cannot cost less than this, so ``frames / floor CPU seconds`` bounds its rate, and that bound over
tshark's rate bounds the ratio to tshark any engine behind this reader can reach.

Usage: python bench/floor.py CAPTURE.pcap  (prints the frames read)
"""

from __future__ import annotations

import sys


def floor(path: str) -> int:
    """Read, digest and checksum-sum every frame of the classic pcap ``path``; returns the frames read."""
    from gro_replay.capture.chunks import PcapChunks
    from gro_replay.capture.reader import open_capture
    from gro_replay.packet.columns import _runs
    from gro_replay.packet.csum import frame_sums

    frames = 0
    with open_capture(path) as cap:
        reader = PcapChunks(cap)
        while (chunk := reader.next()) is not None:
            frame_sums(chunk.buf, chunk.data, chunk.caplen, _runs(chunk.data, chunk.caplen))
            frames += len(chunk)
        cap.hexdigest()
    return frames


if __name__ == "__main__":
    print(floor(sys.argv[1]))

"""The floor of a replay (issue 12): what a batch-engine replay of the benchmark's captures costs before its first
GRO decision.

Run as its own process by ``bench/modes.py`` and measured like a replay (user + system CPU of the child, the
interpreter's start included): start as the command starts (click imported, OpenBLAS on one thread and the
collector's threshold as ``cli/entry.py`` sets them), import numpy, open the capture as the replay does (its BLAKE3
digest thread included: ``capture/reader.py open_capture``), read every block and walk its records
(``capture/chunks.py PcapChunks``, the batch engine's reader of a classic pcap) and take the ones' complement sum
of every frame's bytes (``packet/csum.py frame_sums``, which ``packet/columns.py analyse`` takes of every block
that holds a VXLAN or Geneve frame: the checksum verdicts of the NIC models and of
``__skb_gro_checksum_validate`` come from it). No flow, key, poll or kernel model is built.

The benchmark's captures are all tunnel frames, replayed on the batch path: such a replay does all of this and
more, so ``frames / floor CPU seconds`` bounds its rate, and that bound over tshark's rate bounds the ratio to
tshark the batch engine can reach behind this reader. (A capture without tunnel frames skips the sums; a replay
on the frame-by-frame path, e.g. ``--nic mlx5`` or ``--flow``, reads otherwise and costs more a frame.)

Usage: python bench/floor.py CAPTURE.pcap  (prints the frames read)
"""

from __future__ import annotations

import sys


def floor(path: str) -> int:
    """Read, digest and checksum-sum every frame of the classic pcap ``path``; returns the frames read."""
    import click  # noqa: F401  (every command imports it first)

    from gro_replay.cli.entry import command_process

    command_process()  # before numpy loads, as the command's entry
    from gro_replay.capture.chunks import PcapChunks
    from gro_replay.capture.reader import open_capture
    from gro_replay.packet.csum import frame_sums
    from gro_replay.packet.rows import record_runs

    frames = 0
    with open_capture(path) as cap:
        reader = PcapChunks(cap)
        while (chunk := reader.next()) is not None:
            frame_sums(chunk.buf, chunk.data, chunk.caplen, record_runs(chunk.data, chunk.caplen))
            frames += len(chunk)
        cap.hexdigest()
    return frames


if __name__ == "__main__":
    print(floor(sys.argv[1]))

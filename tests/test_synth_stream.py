"""synth streams: frames are built one at a time and written as they come, for the bulk scenario and the mix.

Issue 13's kind: time and memory grow with input size and live flows, never with a number read from the input.
``--frames`` is such a number: memory must be bounded by the live flows (bulk) or connections and pending ACKs
(mix), not by how many frames are asked for. Checked with tracemalloc (allocations counted by Python, not
timings): the memory traced while producing the first frame does not depend on ``frames`` at all, and the peak
of a whole run of 10x the frames stays within twice the smaller run's (a run that held every frame or spec
would grow ~10x).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator

import pytest

import gro_replay.synth as synth_mod
from gro_replay.synth import Scenario, synth_frames, write_frames
from gro_replay.synth_mix import OverlayMix, mix_frames

Frames = Callable[[int], Iterator[tuple[int, bytes]]]

#: the bulk scenario with 4 flows, ``n`` frames in all, and the overlay-node mix of ``n`` frames
GENERATORS: dict[str, Frames] = {
    "bulk": lambda n: synth_frames(Scenario(flows=4, frames=n // 4, interleave="8", pause_every=10)),
    "mix": lambda n: mix_frames(OverlayMix(frames=n)),
}


def _traced_peak(run: Callable[[], object]) -> int:
    """Peak bytes traced by tracemalloc while ``run()`` runs."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_first_frame_costs_the_same_for_any_frame_count(kind):
    # 10**9 frames (the CLI's largest --frames): the first frame comes after the same bounded work as for 20k
    gen = GENERATORS[kind]
    peaks = {n: _traced_peak(lambda n=n: next(gen(n))) for n in (20_000, 200_000, 10**9)}
    assert peaks[10**9] < 2 * peaks[20_000] + 64_000, peaks
    assert peaks[200_000] < 2 * peaks[20_000] + 64_000, peaks


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_whole_run_peak_memory_does_not_grow_with_frames(kind, tmp_path):
    gen = GENERATORS[kind]

    def run(n: int) -> None:
        assert write_frames(tmp_path / f"{kind}{n}.pcap", gen(n)) == n

    small, large = _traced_peak(lambda: run(1_000)), _traced_peak(lambda: run(10_000))
    assert large < 2 * small + 64_000, (small, large)


def test_writer_receives_each_frame_before_the_next_is_built(tmp_path, monkeypatch):
    built = 0

    def counted(frames: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
        nonlocal built
        for item in frames:
            built += 1
            yield item

    seen: list[int] = []  # frames built when the writer got each frame
    real_write = synth_mod.PcapWriter.write
    monkeypatch.setattr(
        synth_mod.PcapWriter,
        "write",
        lambda self, ts, frame: (seen.append(built), real_write(self, ts, frame)),
    )
    sc = Scenario(flows=3, frames=100, interleave="4")
    assert write_frames(tmp_path / "out.pcap", counted(synth_frames(sc))) == 300
    # write_frames pulls the first frame before creating the file; from then on frame i is written before
    # frame i + 1 is built
    assert seen == list(range(1, 301))

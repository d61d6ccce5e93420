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


def _bench_batch():
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("bench_batch", ROOT / "bench" / "batch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_batch_captures_stream(tmp_path):
    """bench/batch.py writes a capture as ``copies`` copies of a scenario: the scenario goes through a temporary
    file, not a list, so its memory does not grow with the frames either (10x the frames: within twice the peak)."""
    bench = _bench_batch()

    def run(n: int) -> None:
        path = tmp_path / f"b{n}.pcap"
        bench.write_copies(path, Scenario(flows=2, frames=n // 2, interleave="8"), 3)
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(f"b{n}.")) == [path.name]

    small, large = _traced_peak(lambda: run(1_000)), _traced_peak(lambda: run(10_000))
    assert large < 2 * small + 64_000, (small, large)


def test_bench_batch_copies_are_the_scenario_shifted(tmp_path):
    """Each copy is the scenario's frames, the next copy starting 1 ms after the previous one's last frame."""
    from gro_replay.capture.reader import open_capture

    sc = Scenario(flows=2, frames=20, interleave="rr")
    one = list(synth_frames(sc))  # 40 frames: small, the expectation
    span = one[-1][0] - one[0][0] + 1_000_000
    _bench_batch().write_copies(tmp_path / "c.pcap", sc, 3)
    with open_capture(tmp_path / "c.pcap", digest=None) as cap:
        got = [(ts, frame) for ts, frame, _orig, _lt in cap]
    assert got == [(ts + c * span, frame) for c in range(3) for ts, frame in one]


def test_no_frame_generator_is_made_a_list_outside_the_tests():
    """The kind: no code of the package or the benchmarks turns a whole synth run into a list."""
    import re

    from conftest import ROOT

    pattern = re.compile(r"(list|tuple|sorted)\(\s*(synth_frames|mix_frames)\(")
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for d in ("gro_replay", "bench")
        for p in sorted((ROOT / d).rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_synth_dash_writes_standard_output_into_a_replay(tmp_path):
    # "-" is standard output, as every other command reads it (newcomer's finding: a file named "-" was written)
    import subprocess

    from conftest import CLI, cli_env

    synth = subprocess.run(
        [*CLI, "synth", "-", "--frames", "10"], env=cli_env(), cwd=tmp_path, capture_output=True, timeout=120
    )
    assert synth.returncode == 0 and synth.stderr == b"wrote 10 frames to standard output\n"
    assert not (tmp_path / "-").exists()
    replay = subprocess.run(
        [*CLI, "-", "--format", "json"], input=synth.stdout, env=cli_env(), capture_output=True, timeout=120
    )
    import json

    assert json.loads(replay.stdout)["input"]["frames_read"] == 10

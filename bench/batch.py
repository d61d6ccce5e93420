"""Benchmark of ``gro-replay batch`` (issue 6): 20 captures one after another vs ``--jobs 2``.

Writes ``--captures`` different synth scenarios (VXLAN/Geneve, outer and inner IPv4/IPv6, zero/computed outer
UDP checksum, 1-4 flows) of about ``--frames`` frames each, cached under ``bench/cache/batch/``: a scenario of
``--frames / --copies`` frames, written ``--copies`` times one after another (each copy 1 ms after the previous
one ends; synth builds frames at a few thousand per second, so this keeps writing the files short while the
replays stay long enough for two workers to pay for the cluster's start). Then, on the same files in the same
run:

- CLI: ``gro-replay CAPTURE --format json`` on each capture, one after another (what a CI job does without
  ``batch``);
- serial: one process replays them one after another in-process (``replay_capture`` + ``document``, compare
  mode) — the cheapest serial form, with no interpreter start per capture (one replay already keeps both cores
  of a 2-core machine busy: the replay and the capture's SHA-256 on a second thread);
- batch: ``gro-replay batch FILES --jobs N --out DIR`` as a subprocess, wall-clock, cluster start included.

It prints the three times and the speedups, and checks that every per-capture document written by ``batch`` and
by the CLI equals the in-process one (exit 1 if not). ``--check`` also exits 1 when batch is not faster than the
CLI one after another.

Usage: python bench/batch.py [--captures 20] [--frames 200000] [--copies 10] [--jobs 2] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import cached_bytecode  # noqa: E402

BENCH = Path(__file__).resolve().parent
CACHE = BENCH / "cache" / "batch"
#: The ``gro-replay`` console script's entry point, run by this interpreter.
GRO_REPLAY = [
    sys.executable,
    "-c",
    "import sys; sys.argv[0] = 'gro-replay'; from gro_replay.cli import main; main()",
]


def scenarios(n: int, frames: int):
    """``n`` different scenarios of about ``frames`` frames each."""
    from gro_replay.synth import Scenario

    out = []
    for i in range(n):
        flows = 1 + i % 4
        out.append(
            Scenario(
                encap="geneve" if i % 2 else "vxlan",
                outer_ipv6=bool(i & 2),
                inner_ipv6=bool(i & 4),
                outer_csum="computed" if i % 3 == 0 else "zero",
                flows=flows,
                frames=max(1, frames // flows),
                interleave="rr" if i % 2 else 8,
            )
        )
    return out


def write_copies(path: Path, sc, copies: int) -> None:
    """Write ``copies`` copies of scenario ``sc``'s frames to ``path`` (nanosecond pcap), each copy 1 ms after the
    previous one ends. Streams: the scenario is generated once into a temporary file beside ``path`` (its first and
    last timestamps noted on the way) and that file is read back once per copy, so memory does not grow with the
    number of frames."""
    from gro_replay.capture.reader import open_capture
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.synth import synth_frames

    one = path.with_suffix(".one.tmp")
    tmp = path.with_suffix(".pcap.tmp")
    try:
        first = last = 0
        with PcapWriter(one) as w:
            for k, (ts, frame) in enumerate(synth_frames(sc)):
                first = ts if k == 0 else first
                last = ts
                w.write(ts, frame)
        span = last - first + 1_000_000
        with PcapWriter(tmp) as w:
            for c in range(copies):
                with open_capture(one, digest=None) as cap:
                    for ts, frame, _orig_len, _linktype in cap:
                        w.write(ts + c * span, frame)
        os.replace(tmp, path)
    finally:
        for f in (one, tmp):
            f.unlink(missing_ok=True)


def ensure_captures(n: int, frames: int, copies: int) -> list[str]:
    CACHE.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, sc in enumerate(scenarios(n, max(1, frames // copies))):
        path = CACHE / f"batch-{frames}x{copies}-{i:02d}.pcap"
        if not path.exists():
            write_copies(path, sc, copies)
        paths.append(str(path))
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", type=int, default=20)
    ap.add_argument("--frames", type=int, default=200_000, help="frames per capture (about)")
    ap.add_argument("--copies", type=int, default=10, help="copies of one scenario per capture")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="exit 1 when batch is not faster than serial")
    args = ap.parse_args(argv)
    cached_bytecode()

    from gro_replay.cli.batch import replay_config
    from gro_replay.report.document import document
    from gro_replay.sim import replay_capture

    print(
        f"writing/reading {args.captures} captures of ~{args.frames:,} frames ...",
        file=sys.stderr,
        flush=True,
    )
    paths = ensure_captures(args.captures, args.frames, args.copies)
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    t0 = time.perf_counter()
    serial = [document(replay_capture(p, replay_config())) for p in paths]
    t_serial = time.perf_counter() - t0
    frames = sum(d["input"]["frames_read"] for d in serial)

    # what a user or a CI job does without batch: the CLI on each capture, one after another
    t0 = time.perf_counter()
    cli_docs = []
    for p in paths:
        r = subprocess.run(
            [*GRO_REPLAY, p, "--format", "json", "--quiet"], capture_output=True, text=True, check=False
        )
        if r.returncode != 0:
            print(f"gro-replay {p} failed (exit {r.returncode}): {r.stderr.strip()}", file=sys.stderr)
            return 1
        cli_docs.append(json.loads(r.stdout))
    t_cli = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as out:
        argv = [*GRO_REPLAY, "batch", *paths, "--jobs", str(args.jobs)]
        argv += ["--out", out, "--format", "json", "--quiet"]
        t0 = time.perf_counter()
        r = subprocess.run(argv, capture_output=True, text=True, check=False)
        t_batch = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"gro-replay batch failed (exit {r.returncode}): {r.stderr.strip()}", file=sys.stderr)
            return 1
        combined = json.loads(r.stdout)
        same = all(
            json.loads(Path(out, row["document"]).read_text(encoding="utf-8")) == doc
            for row, doc in zip(combined["captures"], serial, strict=True)
        )

    same = same and cli_docs == serial
    print(
        f"gro-replay CLI on each capture, one after another: {t_cli:6.1f} s  {frames / t_cli:10,.0f} frames/s"
    )
    print(
        f"serial in one process (no interpreter starts):    {t_serial:6.1f} s  {frames / t_serial:10,.0f} frames/s"
    )
    print(
        f"batch --jobs {args.jobs} (subprocess, cluster start included): {t_batch:6.1f} s  "
        f"{frames / t_batch:10,.0f} frames/s"
    )
    print(
        f"speedup over {args.captures} captures, {frames:,} frames: {t_cli / t_batch:.2f}x vs the CLI one after "
        f"another, {t_serial / t_batch:.2f}x vs one process"
    )
    print(f"per-capture documents identical (batch, CLI, in-process): {'yes' if same else 'NO'}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not same:
        return 1
    return 1 if (args.check and t_batch >= t_cli) else 0


if __name__ == "__main__":
    sys.exit(main())

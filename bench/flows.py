"""gro-replay benchmark of per-flow memory (issue 13, item 2): peak RSS of a replay whose flows are many and short.

Captures (written by this script into a temporary folder, in a child process so that their building never counts):

- ``tiny``: about 1 MB of 60-byte frames, each a flow of its own (one ethertype per frame: 13,800 flows of one
  frame, 1 µs apart), a classic pcap (the batch path) — 347 MB before the document's rows were bounded;
- ``fin``: ``--fin-flows`` short VXLAN/IPv4 TCP connections one after the other (SYN, a 100-byte segment, FIN;
  1 ms apart, so 20,000 connections span 60 s of capture time), each ended by its FIN (pcapng). It is replayed
  with ``--fin-options`` (default ``--flow-timeout 120 --flow-close-timeout 1``: about 333 connections live).

Each replay runs as ``gro-replay CAPTURE --format json`` in a fresh child process (the console script's entry point,
output to a file next to the capture, read back for ``flows_summary.live_max``); its peak RSS is the kernel's
high-water mark of that child (``os.wait4`` ``ru_maxrss``) and its time is wall-clock including interpreter start.
Extra options (``--flows-max 0``, …) are passed through.

Usage: python bench/flows.py [--fin-flows N] [--repeat N] [--root TREE] [--fin-options OPTS] [-- EXTRA OPTIONS]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRO_REPLAY = [
    sys.executable,
    "-c",
    "import sys; sys.argv[0] = 'gro-replay'; from gro_replay.cli import main; main()",
]


def write_tiny(path: str, size: int = 1 << 20) -> int:
    """About ``size`` bytes of pcap: 60-byte frames, frame i of ethertype i (one flow each), 1 µs apart."""
    import struct

    from gro_replay.capture.writer import PcapWriter

    n = (size - 24) // (16 + 60)
    with PcapWriter(path) as w:
        for i in range(n):
            w.write(i * 1000, b"\x02" * 6 + b"\x04" * 6 + struct.pack("!H", i & 0xFFFF) + bytes(46))
    return n


def write_fin(path: str, flows: int) -> int:
    """``flows`` VXLAN TCP connections one after the other: SYN, one 100-byte segment, FIN|ACK, 1 ms apart (pcapng)."""
    from dataclasses import replace

    from gro_replay.capture.writer import PcapngWriter
    from gro_replay.packet.build import ACK, FIN, SYN, FrameSpec, build_frame

    spec = FrameSpec(outer_csum="zero")
    t = 0
    with PcapngWriter(path, [("eth0", "")]) as w:
        for k in range(flows):
            s = replace(spec, sport=1024 + k % 60000, udp_sport=49152 + k // 60000, seq=1000)
            for frame in (
                replace(s, flags=SYN, payload=0),
                replace(s, seq=1001, payload=100),
                replace(s, seq=1101, flags=FIN | ACK, payload=0),
            ):
                w.write(t, build_frame(frame))
                t += 1_000_000
    return 3 * flows


def measure(path: str, extra: list[str], root: Path = ROOT) -> tuple[float, float, object]:
    """(seconds, peak RSS in MB, flows live at most: ``flows_summary.live_max`` or None) of
    ``gro-replay PATH --format json EXTRA`` in a child process, importing the gro_replay of source tree ``root``."""
    import json

    env = dict(os.environ, PYTHONPATH=str(root))
    t0 = time.perf_counter()
    out = path + ".json"
    with open(out, "wb") as null:
        # cwd=root: ``python -c`` puts the working directory first on sys.path
        p = subprocess.Popen(
            [*GRO_REPLAY, path, "--format", "json", "-q", *extra], stdout=null, env=env, cwd=root
        )
        _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"gro-replay {path} failed: status {status}")
    with open(out, "rb") as f:
        doc = json.load(f)
    os.unlink(out)
    live = doc["kernels"][0].get("flows_summary", {}).get("live_max")
    return seconds, usage.ru_maxrss / 1024, live


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fin-flows", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help="source tree whose gro_replay is measured (e.g. an older checkout)",
    )
    ap.add_argument(
        "--fin-options",
        default="--flow-timeout 120 --flow-close-timeout 1",
        help="options of the fin replay ('' for a tree without flow retirement)",
    )
    ap.add_argument("extra", nargs="*", help="options passed to gro-replay (after --)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tiny, fin = os.path.join(tmp, "tiny.pcap"), os.path.join(tmp, "fin.pcapng")
        build = (
            "import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); import flows; "
            "print(flows.write_tiny(sys.argv[3]), flows.write_fin(sys.argv[4], int(sys.argv[5])))"
        )
        out = subprocess.run(
            [sys.executable, "-c", build, str(ROOT), str(ROOT / "bench"), tiny, fin, str(a.fin_flows)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        sizes = {"tiny": (tiny, int(out[0]), []), "fin": (fin, int(out[1]), a.fin_options.split())}
        for name, (path, frames, opts) in sizes.items():
            runs = [measure(path, opts + a.extra, a.root) for _ in range(a.repeat)]
            sec = min(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            mb = os.path.getsize(path) / 1e6
            live = runs[0][2]
            print(
                f"{name}: {frames} frames, {mb:.2f} MB file: {sec:.2f} s, peak RSS {rss:.0f} MB"
                + (f", at most {live} flows live" if live is not None else "")
            )


if __name__ == "__main__":
    main()

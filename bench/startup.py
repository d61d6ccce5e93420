"""Start-up time of ``gro-replay --version`` and ``gro-replay --help`` (issue 10 item 8: well under half a second).

Runs each command ``--repeat`` times in a fresh interpreter (the console script's entry point, this Python) and
prints the median wall-clock time next to ``python -c pass`` measured the same way, so that a loaded machine's
interpreter start can be told apart from gro-replay's own imports. Uses hyperfine when it is installed
(``--hyperfine``), else ``time.perf_counter`` around ``subprocess.run``. Also lists the heaviest modules
``import gro_replay.cli`` pulls in (``python -X importtime``).

Usage: python bench/startup.py [--repeat N] [--target SECONDS] [--check]
``--check`` exits 1 when the median of ``--version`` or ``--help`` is at or above the target (default 0.5 s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRY = [
    sys.executable,
    "-c",
    "import sys; sys.argv[0] = 'gro-replay'; from gro_replay.cli import entry; entry()",
]
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "gro-replay --version": [*ENTRY, "--version"],
    "gro-replay --help": [*ENTRY, "--help"],
}


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def median_seconds(cmd: list[str], repeat: int) -> float:
    """Median wall-clock seconds of ``cmd`` over ``repeat`` runs (output discarded; a failure raises)."""
    times = []
    env = _env()
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def heaviest_imports(n: int = 8) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the ``n`` heaviest imports of ``import gro_replay.cli``."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import gro_replay.cli"],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    ).stderr
    rows = []
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    return sorted(rows, reverse=True)[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--target", type=float, default=0.5)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--hyperfine", action="store_true", help="also run hyperfine (when installed)")
    args = ap.parse_args()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load}")
    res = {}
    for name, cmd in CASES.items():
        res[name] = median_seconds(cmd, args.repeat)
        print(f"  {name:<24} {res[name] * 1000:7.1f} ms (median of {args.repeat})")
    base = res["python -c pass"]
    for name in ("gro-replay --version", "gro-replay --help"):
        print(f"  {name:<24} {1000 * (res[name] - base):7.1f} ms above the bare interpreter")
    print("heaviest imports of gro_replay.cli (cumulative):")
    for us, mod in heaviest_imports():
        print(f"  {us / 1000:7.1f} ms  {mod}")
    if args.hyperfine and shutil.which("hyperfine"):
        subprocess.run(
            ["hyperfine", "--warmup", "3", *(" ".join(f"'{c}'" for c in CASES[n]) for n in CASES)], env=_env()
        )
    slow = [n for n in ("gro-replay --version", "gro-replay --help") if res[n] >= args.target]
    if slow:
        print(f"target {args.target:.2f} s missed: {', '.join(slow)}")
        return 1 if args.check else 0
    print(f"target {args.target:.2f} s met")
    return 0


if __name__ == "__main__":
    sys.exit(main())

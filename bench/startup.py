"""Start-up cost of ``gro-replay --version``, ``gro-replay --help`` (issue 10 item 8: well under half a second) and a
replay of the fix's 17-frame sample as a CI job runs it (``--format json --quiet``), where the run is all start-up.

Runs each command ``--repeat`` times in a fresh interpreter (the console script's entry point, this Python), the
cases interleaved so that a change in the machine's load hits them alike, and prints the median CPU time (user +
system of the child, ``os.wait4``) and wall-clock time next to ``python -c pass`` measured the same way, so that a
loaded machine's interpreter start can be told apart from gro-replay's own imports. Bytecode is cached as an
installed package's is (bench/run.py ``cached_bytecode``: ``PYTHONDONTWRITEBYTECODE`` unset, ``PYTHONPYCACHEPREFIX``
under bench/cache/). ``--no-site`` runs every case with ``python -S`` on this interpreter's module path: no ``.pth``
file's imports (an editable install's finder, an environment's own) in the numbers, as in a plain installation.
Uses hyperfine when it is installed (``--hyperfine``). Also lists the heaviest modules the replay imports
(``python -X importtime``).

Usage: python bench/startup.py [--repeat N] [--target SECONDS] [--check] [--no-site]
``--check`` exits 1 when the median wall time of ``--version`` or ``--help`` is at or above the target (default
0.5 s).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ROOT, cached_bytecode  # noqa: E402

FIX_SAMPLE = ROOT / "sample_pcaps" / "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
ENTRY = ["-c", "import sys; sys.argv[0] = 'gro-replay'; from gro_replay.cli import entry; entry()"]
CASES = {
    "python -c pass": ["-c", "pass"],
    "gro-replay --version": [*ENTRY, "--version"],
    "gro-replay --help": [*ENTRY, "--help"],
    "gro-replay SAMPLE --format json -q": [*ENTRY, str(FIX_SAMPLE), "--format", "json", "--quiet"],
}


def _env(no_site: bool) -> dict:
    env = dict(os.environ)
    path = [str(ROOT)] + ([p for p in sys.path if p] if no_site else [env.get("PYTHONPATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    return env


def _python(no_site: bool) -> list[str]:
    return [sys.executable, "-S"] if no_site else [sys.executable]


def measure(cases: dict[str, list[str]], repeat: int, no_site: bool) -> dict[str, tuple[float, float]]:
    """Median (CPU seconds, wall seconds) of each case's command over ``repeat`` runs, the cases interleaved
    (output discarded; a failure raises)."""
    env = _env(no_site)
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    wall: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, args in cases.items():
            t0 = time.perf_counter()
            p = subprocess.Popen([*_python(no_site), *args], stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
            _, status, ru = os.wait4(p.pid, 0)
            wall[name].append(time.perf_counter() - t0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(f"{name}: exit status {os.waitstatus_to_exitcode(status)}")
            cpu[name].append(ru.ru_utime + ru.ru_stime)
    return {name: (statistics.median(cpu[name]), statistics.median(wall[name])) for name in cases}


def heaviest_imports(args: list[str], no_site: bool, n: int = 10) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the ``n`` heaviest imports of the command ``args`` (one run: noisy)."""
    out = subprocess.run(
        [*_python(no_site), "-X", "importtime", *args],
        capture_output=True,
        text=True,
        env=_env(no_site),
        cwd=ROOT,
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
    ap.add_argument("--no-site", action="store_true", help="run the cases with python -S (no .pth imports)")
    ap.add_argument("--hyperfine", action="store_true", help="also run hyperfine (when installed)")
    args = ap.parse_args()
    cached_bytecode()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load}")
    res = measure(CASES, args.repeat, args.no_site)
    for name, (cpu, wall) in res.items():
        print(f"  {name:<36} {cpu * 1000:7.1f} ms CPU {wall * 1000:7.1f} ms wall (median of {args.repeat})")
    base_cpu, base_wall = res["python -c pass"]
    for name in list(CASES)[1:]:
        cpu, wall = res[name]
        print(
            f"  {name:<36} {1000 * (cpu - base_cpu):7.1f} ms CPU {1000 * (wall - base_wall):7.1f} ms wall above it"
        )
    print("heaviest imports of the replay (cumulative, one run):")
    for us, mod in heaviest_imports(CASES["gro-replay SAMPLE --format json -q"], args.no_site):
        print(f"  {us / 1000:7.1f} ms  {mod}")
    if args.hyperfine and shutil.which("hyperfine"):
        py = " ".join(_python(args.no_site))
        subprocess.run(
            ["hyperfine", "--warmup", "3", *(f"{py} " + " ".join(f"'{c}'" for c in CASES[n]) for n in CASES)],
            env=_env(args.no_site),
            cwd=ROOT,
        )
    slow = [n for n in ("gro-replay --version", "gro-replay --help") if res[n][1] >= args.target]
    if slow:
        print(f"target {args.target:.2f} s missed: {', '.join(slow)}")
        return 1 if args.check else 0
    print(f"target {args.target:.2f} s met")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""gro-replay benchmark (issue 6): compare-mode frames/s, peak RSS, and the rate against tshark.

Captures are generated once with ``gro_replay.synth`` and cached under ``bench/cache/`` (gitignored):

- ``bulk``: one VXLAN/IPv4 bulk-TCP flow, outer UDP checksum 0 (the 89e5c58fc1e2 scenario), ``--frames``;
- ``flows64``: 64 such flows interleaved round-robin (one frame of each in turn), ``--frames``;
- ``flows64`` again with ``--big-frames`` frames, for the memory check (same live flows, 4x the frames).

Each measured replay runs in a fresh subprocess (``python bench/run.py --child PATH``): the child times
``replay_capture`` + ``document`` in compare mode (pre-fix and post-fix kernels, both stages, stats) with
``time.perf_counter``, and the parent takes the child's peak RSS from ``os.wait4`` (``ru_maxrss``, the
kernel's high-water mark of that one child; the child's /proc VmHWM is recorded too). frames/s is the median
of ``--repeat`` runs. The CLI (``gro-replay FILE --format json``, the console script's entry point) runs once per 1M-frame file,
timed wall-clock including interpreter start, and its SUMMARY line must equal the in-process one.
``tshark -q -z conv,tcp -r FILE`` runs ``--repeat`` times on the same file in the same run (wall-clock,
median); the ratio is gro-replay's frames/s over tshark's.

Targets (issue 6): >= 200,000 frames/s on each 1M-frame capture, >= 10x tshark, peak RSS < 250 MB for 1M and
4M frames. ``--check`` exits 1 when a target is missed; without it the benchmark only reports.

Usage: python bench/run.py [--quick] [--frames N] [--big-frames N] [--repeat N] [--profile | --profile-only] [--json PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CACHE = BENCH / "cache"

#: The ``gro-replay`` console script's entry point, run by this interpreter.
GRO_REPLAY = [
    sys.executable,
    "-c",
    "import sys; sys.argv[0] = 'gro-replay'; from gro_replay.cli import main; main()",
]

TARGET_FPS = 200_000
TARGET_TSHARK_RATIO = 10.0
TARGET_RSS_MB = 250.0


# -- captures ------------------------------------------------------------------------------------------------------
def scenario(kind: str, frames: int):
    """The synth Scenario of a benchmark capture of about ``frames`` frames (64 flows: a multiple of 64)."""
    from gro_replay.synth import Scenario

    if kind == "bulk":
        return Scenario(frames=frames)
    if kind == "flows64":
        return Scenario(flows=64, frames=max(1, frames // 64), interleave="rr")
    raise ValueError(kind)


def ensure_capture(kind: str, frames: int, regenerate: bool = False) -> Path:
    """Path of the cached capture, written once (to a temporary name, then renamed) when missing.

    A lock file serialises writers, so benchmark processes started side by side write each capture once.
    """
    import fcntl

    sc = scenario(kind, frames)
    key = hashlib.sha256(repr(sc).encode()).hexdigest()[:10]
    path = CACHE / f"{kind}-{frames}-{key}.pcap"
    if path.exists() and not regenerate:
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists() and not regenerate:
            return path
        tmp = path.with_suffix(".pcap.tmp")
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        # in a child: the scenario's frame specs would otherwise stay in this process, and every measured child
        # forked from it would start with that memory counted in its peak RSS (ru_maxrss)
        out = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--write-capture", kind, str(frames), str(tmp)],
            check=True,
            capture_output=True,
            text=True,
        )
        n = int(out.stdout)
        os.replace(tmp, path)
        dt = time.perf_counter() - t0
        print(
            f"  {n:,} frames, {path.stat().st_size / 1e6:,.0f} MB in {dt:.0f} s", file=sys.stderr, flush=True
        )
    return path


# -- measured subprocesses -----------------------------------------------------------------------------------------
def cached_bytecode() -> None:
    """Let the measured children keep their compiled bytecode (under ``bench/cache/pycache``), as an installed
    package does, even where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's environment sets it: every child
    then compiled the package's ~80 modules again, ~0.3 CPU s per run), and compile it once now, untimed: a replay
    of the shipped sample as pcap and pcapng and its explain import what the measured runs import (``--version``
    alone imports a few modules: the first measured run compiled the rest, ~0.4 CPU s on the mix)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")
    sample = ROOT / "sample_pcaps" / "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
    with tempfile.TemporaryDirectory() as td:
        ng = Path(td) / "sample.pcapng"
        pcapng_copy(sample, ng)
        for argv in (
            [str(sample), "--format", "json", "-q", "--trace", str(Path(td) / "trace.txt")],
            [str(ng), "--format", "json", "-q"],
            ["explain", str(sample), "--format", "json", "-q"],
        ):
            subprocess.run(
                [sys.executable, "-m", "gro_replay", *argv], check=True, capture_output=True, cwd=ROOT
            )


def page_in(*paths: Path) -> None:
    """Read each file once, untimed, so that it is in the page cache before a measured run: the first run of a
    file not in the page cache paid its disk reads in system time: 1.87 CPU s instead of 1.60 on the 200k mix,
    6.0 instead of 2.96 on the 1M bulk capture (after ``drop_caches``, 2026-12-04), which ``modes.py``'s one
    run per mode reported as gro-replay's speed; tshark, measured later on the same file, did not pay them."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass


def pcapng_copy(src: Path, dst: Path) -> None:
    """``src`` (a classic Ethernet pcap) rewritten as pcapng (dpkt's writer)."""
    import dpkt

    with open(src, "rb") as f, open(dst, "wb") as g:
        w = dpkt.pcapng.Writer(g, snaplen=65535, linktype=1)
        for ts, buf in dpkt.pcap.Reader(f):
            w.writepkt(buf, ts=float(ts))


def cooked_copy(src: Path, dst: Path) -> None:
    """``src`` (a classic Ethernet pcap) as ``tcpdump -i any`` records it: Linux cooked v2 (LINUX_SLL2, 276), every
    frame received (packet type 0) on ifindex 2, its source MAC as the link address; times kept to the ns."""
    import struct

    from gro_replay.capture.reader import open_capture
    from gro_replay.capture.writer import PcapWriter

    with open_capture(str(src), digest=None) as cap, PcapWriter(dst, linktype=276) as w:
        for ts_ns, buf, orig_len, _lt in cap:
            head = struct.pack(
                "!HHIHBB8s", int.from_bytes(buf[12:14], "big"), 0, 2, 1, 0, 6, buf[6:12] + bytes(2)
            )
            w.write(ts_ns, head + buf[14:], orig_len + 6)


def run_measured(
    argv: list[str], capture_stdout: bool = True
) -> tuple[int, bytes, bytes, float, float, float]:
    """Run ``argv``; return (exit status, stdout, stderr, wall seconds, CPU seconds (user + system) and peak
    RSS in MB of that child).

    Output goes to temporary files and the child is reaped with ``os.wait4``, which reports the rusage of
    this one child (``RUSAGE_CHILDREN`` would give the maximum over every child so far).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(
            argv, stdout=out if capture_stdout else subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL
        )
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu = ru.ru_utime + ru.ru_stime
        return p.returncode, out.read(), err.read(), wall, cpu, ru.ru_maxrss / 1024.0


def _vmhwm_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def child(path: str) -> None:
    """In a fresh process: one compare-mode replay of ``path``; print timing and the SUMMARY as JSON."""
    from gro_replay.cli.batch import replay_config
    from gro_replay.report.document import document
    from gro_replay.sim import replay_capture

    cfg = replay_config()  # the CLI's defaults: compare mode, pre-fix and post-fix kernels
    t0, c0 = time.perf_counter(), time.process_time()
    result = replay_capture(path, cfg)
    doc = document(result)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {
        "seconds": dt,
        "cpu_seconds": cpu,
        "frames": result.input.frames_read,
        "summary": doc["summary"],
        "vmhwm_kb": _vmhwm_kb(),
        "batch": result.batch,
    }
    print(json.dumps(out))


def replay_in_process(path: Path) -> dict:
    """One in-process compare-mode replay in a fresh subprocess: frames, seconds, frames/s, RSS MB."""
    rc, out, err, _, _, rss = run_measured(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(path)]
    )
    if rc != 0:
        raise SystemExit(f"replay of {path} failed (exit {rc}): {err.decode(errors='replace').strip()}")
    r = json.loads(out)
    r["fps"] = r["frames"] / r["seconds"]
    r["cpu_fps"] = r["frames"] / r["cpu_seconds"]
    r["rss_mb"] = rss
    return r


def replay_cli(path: Path) -> dict:
    """``gro-replay FILE --format json`` once, wall-clock including interpreter start."""
    argv = [*GRO_REPLAY, str(path), "--format", "json", "--quiet"]
    rc, out, err, wall, cpu, rss = run_measured(argv)
    if rc != 0:
        raise SystemExit(
            f"gro-replay CLI on {path} failed (exit {rc}): {err.decode(errors='replace').strip()}"
        )
    doc = json.loads(out)
    frames = doc["input"]["frames_read"]
    return {
        "frames": frames,
        "seconds": wall,
        "fps": frames / wall,
        "cpu_fps": frames / cpu,
        "rss_mb": rss,
        "summary": doc["summary"],
    }


def tshark_version(tshark: str) -> str:
    out = subprocess.run([tshark, "--version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else "tshark"


def run_tshark(tshark: str, path: Path, frames: int) -> dict:
    """``tshark -q -z conv,tcp -r FILE`` once, wall-clock; stdout discarded."""
    rc, _, err, wall, cpu, rss = run_measured(
        [tshark, "-q", "-z", "conv,tcp", "-r", str(path)], capture_stdout=False
    )
    if rc != 0:
        raise SystemExit(f"tshark on {path} failed (exit {rc}): {err.decode(errors='replace').strip()}")
    return {"seconds": wall, "fps": frames / wall, "cpu_fps": frames / cpu, "rss_mb": rss}


# -- profile -------------------------------------------------------------------------------------------------------
def profile(paths: list[Path], which: str, top: int) -> str:
    """Profile one compare-mode replay of each path; return the top ``top`` entries as text.

    ``cprofile`` (the default): functions sorted by own time (tottime), with call counts; its per-call
    overhead inflates small functions. ``pyinstrument`` (when installed): the sampled call tree, first
    ``top`` lines.
    """
    import cProfile
    import io
    import pstats

    from gro_replay.cli.batch import replay_config
    from gro_replay.report.document import document
    from gro_replay.sim import replay_capture

    texts = []
    for path in paths:
        if which == "pyinstrument":
            from pyinstrument import Profiler
            from pyinstrument.renderers import ConsoleRenderer

            prof = Profiler(interval=0.0005)
            prof.start()
            document(replay_capture(str(path), replay_config()))
            prof.stop()
            text = prof.output(ConsoleRenderer(time="percent_of_total", unicode=False, color=False))
            lines = [ln for ln in text.splitlines() if ln.strip()]
            texts.append(f"pyinstrument call tree, {path.name}:\n" + "\n".join(lines[: top + 4]))
        else:
            prof = cProfile.Profile()
            prof.enable()
            document(replay_capture(str(path), replay_config()))
            prof.disable()
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime").print_stats(top)
            body = buf.getvalue().strip().splitlines()
            start = next((i for i, ln in enumerate(body) if "function calls" in ln), 0)
            texts.append(f"cProfile, sorted by own time (tottime), {path.name}:\n" + "\n".join(body[start:]))
    return "\n\n".join(texts)


# -- machine -------------------------------------------------------------------------------------------------------
def machine() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    mem = 0
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            mem = int(next(ln.split()[1] for ln in f if ln.startswith("MemTotal:"))) // 1024
    except (OSError, StopIteration):
        pass
    import numpy

    return {
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "memory_mb": mem,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "loadavg_start": os.getloadavg(),
    }


# -- main ----------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=1_000_000, help="frames of the bulk and 64-flow captures")
    ap.add_argument(
        "--big-frames",
        type=int,
        default=None,
        help="frames of the memory capture (default 4x; 0: no memory run)",
    )
    ap.add_argument("--quick", action="store_true", help="smoke run: --frames 100000 (memory capture 4x)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per capture (median)")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI run")
    ap.add_argument("--no-tshark", action="store_true", help="skip tshark")
    ap.add_argument("--profile", action="store_true", help="profile a replay and print the top entries")
    ap.add_argument("--profile-only", action="store_true", help="only the profile, no measurements")
    ap.add_argument("--profiler", choices=["cprofile", "pyinstrument"], default="cprofile")
    ap.add_argument("--profile-frames", type=int, default=100_000, help="size of the profiled captures")
    ap.add_argument("--profile-top", type=int, default=25)
    ap.add_argument("--regenerate", action="store_true", help="rewrite the cached captures")
    ap.add_argument("--generate-only", action="store_true", help="write the captures and stop")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target of issue 6 is missed")
    ap.add_argument("--json", dest="json_path", help="also write the numbers as JSON to this path")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--write-capture", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cached_bytecode()
    if args.write_capture:
        from gro_replay.synth import write_scenario

        kind, n, out_path = args.write_capture
        print(write_scenario(out_path, scenario(kind, int(n))))
        return 0
    if args.child:
        child(args.child)
        return 0
    if args.quick:
        args.frames = 100_000
    big = args.big_frames if args.big_frames is not None else 4 * args.frames
    if args.frames < 64 or (big and big < 64) or args.repeat < 1:
        ap.error("--frames and --big-frames (unless 0) must be at least 64, --repeat at least 1")

    caps = {"bulk": ensure_capture("bulk", args.frames, args.regenerate)}
    caps["flows64"] = ensure_capture("flows64", args.frames, args.regenerate)
    prof_paths = []
    if args.profile or args.profile_only:
        pf = min(args.profile_frames, args.frames)
        prof_paths = [
            ensure_capture("bulk", pf, args.regenerate),
            ensure_capture("flows64", pf, args.regenerate),
        ]
    if args.profile_only:
        print(profile(prof_paths, args.profiler, args.profile_top))
        return 0
    if args.generate_only:
        if big:
            ensure_capture("flows64", big, args.regenerate)
        return 0

    tshark = None if args.no_tshark else shutil.which("tshark")
    info = {"machine": machine(), "tshark": tshark_version(tshark) if tshark else "tshark not available"}
    print(
        f"machine: {info['machine']['cpu']}, {info['machine']['cores']} cores, "
        f"{info['machine']['memory_mb']:,} MB, {info['machine']['platform']}, Python {info['machine']['python']}"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in info['machine']['loadavg_start'])}")
    print(f"tshark: {info['tshark']}\n", flush=True)

    rows = []
    missed = []
    for name, path in caps.items():
        page_in(path)
        runs = [replay_in_process(path) for _ in range(args.repeat)]
        frames = runs[0]["frames"]
        fps = statistics.median(r["fps"] for r in runs)
        cpu_fps = statistics.median(r["cpu_fps"] for r in runs)
        rss = max(r["rss_mb"] for r in runs)
        row = {
            "capture": name,
            "file": path.name,
            "frames": frames,
            "fps_runs": [round(r["fps"]) for r in runs],
            "fps": fps,
            "cpu_fps": cpu_fps,
            "rss_mb": rss,
            "vmhwm_mb": max(r["vmhwm_kb"] for r in runs) / 1024,
        }
        if not args.no_cli:
            cli = replay_cli(path)
            if cli["summary"] != runs[0]["summary"]:
                raise SystemExit(f"CLI and in-process SUMMARY differ on {path.name}")
            row["cli_fps"] = cli["fps"]
            row["cli_cpu_fps"] = cli["cpu_fps"]
            row["cli_seconds"] = cli["seconds"]
            row["cli_rss_mb"] = cli["rss_mb"]
        if tshark:
            ts = [run_tshark(tshark, path, frames) for _ in range(args.repeat)]
            row["tshark_fps"] = statistics.median(t["fps"] for t in ts)
            row["tshark_cpu_fps"] = statistics.median(t["cpu_fps"] for t in ts)
            row["tshark_rss_mb"] = max(t["rss_mb"] for t in ts)
            row["tshark_fps_runs"] = [round(t["fps"]) for t in ts]
            row["ratio"] = fps / row["tshark_fps"]
            row["ratio_cpu"] = cpu_fps / row["tshark_cpu_fps"]
        row["summary"] = runs[0]["summary"]
        row["batch"] = runs[0].get("batch")
        rows.append(row)
        runs_text = ", ".join(f"{x:,}" for x in row["fps_runs"])
        lines = [
            f"{name} ({frames:,} frames)",
            f"  gro-replay in-process  {fps:>9,.0f} frames/s (median; runs {runs_text}), "
            f"{cpu_fps:,.0f} per CPU-second; peak RSS {rss:,.0f} MB",
        ]
        b = row["batch"]
        lines.append(
            "  batch path             "
            + (
                f"{b['polls_cached']:,} polls from the poll cache, {b['polls_simulated']:,} simulated"
                if b
                else "not used (frame-by-frame path)"
            )
        )
        if "cli_fps" in row:
            lines.append(
                f"  gro-replay CLI         {row['cli_fps']:>9,.0f} frames/s ({row['cli_seconds']:.1f} s, 1 run), "
                f"{row['cli_cpu_fps']:,.0f} per CPU-second; peak RSS {row['cli_rss_mb']:,.0f} MB"
            )
        if tshark:
            ts_text = ", ".join(f"{x:,}" for x in row["tshark_fps_runs"])
            lines.append(
                f"  tshark -z conv,tcp     {row['tshark_fps']:>9,.0f} frames/s (median; runs {ts_text}), "
                f"{row['tshark_cpu_fps']:,.0f} per CPU-second; peak RSS {row['tshark_rss_mb']:,.0f} MB"
            )
            lines.append(
                f"  gro-replay / tshark    {row['ratio']:.2f}x (wall), {row['ratio_cpu']:.2f}x (CPU time)"
            )
        else:
            lines.append("  tshark not available")
        print("\n".join(lines), flush=True)
        if fps < TARGET_FPS:
            missed.append(f"{name}: {fps:,.0f} frames/s < {TARGET_FPS:,}")
        if tshark and row["ratio"] < TARGET_TSHARK_RATIO:
            missed.append(f"{name}: {row['ratio']:.2f}x tshark < {TARGET_TSHARK_RATIO:g}x")
        if rss >= TARGET_RSS_MB:
            missed.append(f"{name}: peak RSS {rss:,.0f} MB >= {TARGET_RSS_MB:g}")

    mem_row = None
    if big:
        big_path = ensure_capture("flows64", big, args.regenerate)
        mem = replay_in_process(big_path)
        mem_row = {
            "capture": "flows64-memory",
            "file": big_path.name,
            "frames": mem["frames"],
            "fps": mem["fps"],
            "cpu_fps": mem["cpu_fps"],
            "rss_mb": mem["rss_mb"],
            "vmhwm_mb": mem["vmhwm_kb"] / 1024,
        }
        print(
            f"memory check ({mem['frames']:,} frames)\n  gro-replay in-process  {mem['fps']:>9,.0f} frames/s "
            f"(1 run), {mem['cpu_fps']:,.0f} per CPU-second; peak RSS {mem['rss_mb']:,.0f} MB",
            flush=True,
        )
        if mem["rss_mb"] >= TARGET_RSS_MB:
            missed.append(f"memory capture: peak RSS {mem['rss_mb']:,.0f} MB >= {TARGET_RSS_MB:g}")

    info["loadavg_end"] = os.getloadavg()
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in info['loadavg_end'])}")
    print(
        f"targets (issue 6): >= {TARGET_FPS:,} frames/s, >= {TARGET_TSHARK_RATIO:g}x tshark, peak RSS < "
        f"{TARGET_RSS_MB:g} MB: " + ("all met" if not missed else "missed: " + "; ".join(missed))
    )

    def write_json(prof_text: str) -> None:
        if args.json_path:
            doc = {**info, "rows": rows, "memory": mem_row, "missed": missed, "profile": prof_text}
            Path(args.json_path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")

    write_json("")  # the numbers are kept even if the profile run fails
    if prof_paths:
        prof_text = profile(prof_paths, args.profiler, args.profile_top)
        print("\n" + prof_text)
        write_json(prof_text)
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Many captures at once: one replay per capture on a Dask worker, one JSON document each.

``run_batch(paths, config, jobs=N)`` starts a ``distributed.LocalCluster`` of N single-threaded worker
processes on the loopback address (or connects to a running scheduler with ``scheduler=ADDRESS``), submits
``replay_one(path, config)`` per capture, and returns one :class:`CaptureOutcome` per path in input order.
Each worker runs exactly what ``gro-replay CAPTURE --format json`` runs (``sim.replay_capture`` then
``report.document.document``), so a capture's document does not depend on where it ran. A capture that cannot
be replayed (unreadable, not pcap/pcapng, an error inside the replay, a worker that died) becomes an outcome
with an ``error`` line; the others go on.

Paths are sent to the workers as given: LocalCluster workers share this process's working directory; the
workers of a remote scheduler must be able to open the same paths (absolute paths on a shared filesystem).

Needs the optional extra ``batch`` (``dask[distributed]``); without it :func:`run_batch` raises
:class:`BatchUnavailable`.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .capture.reader import CaptureError, open_capture
from .project import import_failed_words, install_extra_hint
from .sim import ReplayConfig, replay_capture


class BatchUnavailable(RuntimeError):
    """``dask.distributed`` is not installed, or the scheduler cannot be reached (one-line message)."""


@dataclass
class CaptureOutcome:
    """What one capture gave: its JSON document, or the error that stopped it; worker seconds."""

    path: str
    document: dict | None = None
    error: str | None = None
    seconds: float = 0.0
    out_file: str | None = field(default=None, compare=False)
    #: a failed capture's ``out_file`` had it been replayed (``assign_out_files``): removed from ``--out DIR``
    failed_file: str | None = field(default=None, compare=False)
    #: False when the capture failed before any worker was asked (``unopenable``: it cannot be opened)
    sent: bool = field(default=True, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def row(self) -> dict:
        """The combined report's row: frames read, skipped and replayed (``input.frames_replayed``: a super-frame
        split by ``--resegment`` counts as its segments), phys/tunnel skbs per kernel, the verdict's affected flows
        (``verdict.affected_flows``: all of them, whatever --flows-max lists) and outcome, error."""
        row: dict = {"path": self.path, "document": self.out_file, "error": self.error}
        doc = self.document
        if doc is None:
            row.update(
                frames=None,
                skipped=None,
                replayed=None,
                kernels={},
                affected_flows=None,
                flows_worse_with_fix=None,
                outcome=None,
            )
            return row
        row["frames"] = doc["input"]["frames_read"]
        row["skipped"] = sum(doc["input"]["skipped"].values())
        row["replayed"] = doc["input"]["frames_replayed"]
        row["kernels"] = {
            k["name"]: {
                "phys_skbs": k["stages"]["phys"]["skbs_delivered"],
                "tunnel_skbs": k["stages"]["tunnel"]["skbs_delivered"],
            }
            for k in doc["kernels"]
        }
        # the verdict's count of every affected flow, in every mode (comparison.affected_flows[] lists those
        # --flows-max keeps, and exists in compare mode only), and its outcome
        row["affected_flows"] = doc["verdict"]["affected_flows"]
        # the flows the fix costs aggregation (compare mode; null otherwise, and from a document without it)
        row["flows_worse_with_fix"] = doc["verdict"].get("flows_worse_with_fix")
        row["outcome"] = doc["verdict"]["outcome"]
        return row


def _os_error_line(path: str, e: OSError) -> str:
    return f"{path}: {e.strerror or e}".strip()


def replay_one(path: str, config: ReplayConfig) -> dict:
    """Replay one capture (this runs on a worker) and return ``{"path", "document", "error", "seconds"}``.

    ``document`` is ``report.document.document(replay_capture(path, config))``, or None with ``error`` the
    reader's one-line message when the capture cannot be read. Other exceptions propagate (the caller turns
    them into an error line).
    """
    from .report.document import document

    t0 = time.perf_counter()
    try:
        # replay_capture opens the capture first: the reader's one-line errors (missing, a directory, not
        # pcap/pcapng, bad link type) come before any replay, and a stream is read once
        result = replay_capture(path, config)
    except (CaptureError, OSError) as e:
        return {
            "path": path,
            "document": None,
            "error": _error_line(path, e),
            "seconds": time.perf_counter() - t0,
        }
    return {"path": path, "document": document(result), "error": None, "seconds": time.perf_counter() - t0}


def _error_line(path: str, e: CaptureError | OSError) -> str:
    """The one line a capture that cannot be read gets: the reader's (CaptureError) or the system's."""
    return str(e) if isinstance(e, CaptureError) else _os_error_line(path, e)


def unopenable(path: str) -> str | None:
    """The error line ``replay_one`` would give ``path`` because it cannot be opened as a capture (missing, a
    directory, unreadable, not pcap/pcapng), or None. Tried only for a missing or unreadable path, a directory or
    a regular file (whose header is read): a FIFO or a device is read once, by its worker."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None  # missing or unreadable: open_capture names it
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return None
    try:
        with open_capture(path):
            return None
    except (CaptureError, OSError) as e:
        return _error_line(path, e)


#: a path of this process's descriptor ``N`` (group 2): ``/dev/fd/N``, ``/proc/self/fd/N``, ``/proc/PID/fd/N`` (group 1
#: PID, one's own only), ``/proc/PID/task/TID/fd/N`` (what ``/proc/thread-self`` is)
_FD_PATH = re.compile(r"/(?:dev/fd|proc/(?:self|thread-self|(\d+)(?:/task/\d+)?)/fd)/(\d+)")
_STD_PATHS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def own_descriptor(path: str) -> int | None:
    """The file descriptor of this process that ``path`` names, or None for any other path.

    ``-`` and ``/dev/stdin`` are 0; ``/dev/fd/N`` and ``/proc/self/fd/N`` are N (a process substitution ``<(…)`` is
    ``/dev/fd/63``); a symbolic link to one of them, or under a link to one of their directories, too. A Dask
    worker given such a path opens its own descriptor, not this process's: a local worker inherits none but 0
    (whose bytes this process may already have read), a remote one none at all. An N no descriptor of this process
    can be (``_may_be_open``) is a path as any other, which open(2) refuses.
    """
    if path == "-":
        return 0
    p = os.path.abspath(path)
    for _ in range(40):  # links followed one at a time, at most as many as open(2) does (ELOOP)
        if p in _STD_PATHS:
            return _STD_PATHS[p]
        m = _FD_PATH.fullmatch(p)
        if m is not None and m.group(1) in (None, str(os.getpid())):
            fd = int(m.group(2))
            return fd if _may_be_open(fd) else None
        head, tail = os.path.split(p)
        resolved = os.path.join(os.path.realpath(head), tail)
        if resolved != p:
            p = resolved
            continue
        try:
            target = os.readlink(p)
        except OSError:  # not a link (or gone): the path is what it names
            return None
        p = os.path.normpath(os.path.join(head, target))
    return None


def _may_be_open(fd: int) -> bool:
    """False when ``fd`` cannot be a descriptor of this process: beyond INT_MAX (descriptors are C ints), or not
    open and at or beyond the RLIMIT_NOFILE hard limit, which no descriptor opened under it reaches."""
    if fd > (1 << 31) - 1:
        return False
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or fd < hard:
        return True
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _distributed():
    try:
        import distributed
    except Exception as e:  # noqa: BLE001 - a package's import can raise anything (breaker43)
        broken = import_failed_words(e, "distributed")
        raise BatchUnavailable(
            f"gro-replay batch needs dask.distributed{broken}: {install_extra_hint('batch')}"
        ) from None
    return distributed


def dask_config():
    """``dask.config`` (imported with ``distributed``, which ``_distributed`` checks first)."""
    import dask.config

    return dask.config


def _future_error(path: str, fut) -> str:
    """One line for a future that raised (a bug in the replay, a worker that died)."""
    try:
        exc = fut.exception()
    except Exception as e:  # the exception itself could not be brought back
        exc = e
    text = " ".join(str(exc).split())
    return f"{path}: {type(exc).__name__}" + (f": {text}" if text else "")


def _openable(outcomes: list[CaptureOutcome], on_done: Callable[[CaptureOutcome], None] | None) -> list[int]:
    """The indices of ``outcomes`` whose capture can be opened; the others get ``unopenable``'s error, are marked
    not sent and handed to ``on_done``."""
    todo = []
    for i, out in enumerate(outcomes):
        err = unopenable(out.path)
        if err is None:
            todo.append(i)
            continue
        out.error, out.sent = err, False
        if on_done is not None:
            on_done(out)
    return todo


def _local_cluster(distributed, n: int):
    """A ``distributed.LocalCluster`` of ``n`` single-threaded worker processes on the loopback, no dashboard.
    Raises: BatchUnavailable when it cannot start (``_dask_tried``)."""
    # the nanny's default MALLOC_TRIM_THRESHOLD_ turns off glibc's dynamic mmap threshold: every large numpy
    # buffer of the batch path is then a fresh mmap, and page faults double a replay's time in a worker
    environ = dict(dask_config().get("distributed.nanny.pre-spawn-environ", {}) or {})
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)

    def start():
        with dask_config().set({"distributed.nanny.pre-spawn-environ": environ}):
            return distributed.LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                # no dashboard; the scheduler's HTTP endpoint on a free loopback port, not 8787
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                silence_logs=logging.ERROR,
            )

    return _dask_tried(start, f"cannot start a local Dask cluster of {n} workers")


_T = TypeVar("_T")

#: tries at a Dask cluster or client whose IO-loop thread did not start: Dask gives the thread a fixed 10 s
#: (distributed/utils.py LoopRunner._start_unlocked) and then fails with a bare AssertionError, which a machine
#: busy with other work can cause; each further try waits another 10 s
_LOOP_START_TRIES = 3


def _dask_tried(make: Callable[[], _T], failed: str) -> _T:
    """``make()`` (a ``distributed.Client`` or ``LocalCluster``), tried again up to ``_LOOP_START_TRIES`` times in
    all when only Dask's IO-loop thread failed to start.
    Raises: BatchUnavailable "FAILED: why", one line, for whatever Dask raises (OSError, TimeoutError, ValueError
    for an unknown scheme, RuntimeError, the bare AssertionError of a loop that never started, after the last
    try)."""
    tries = 1
    while True:
        try:
            return make()
        except Exception as e:  # noqa: BLE001 - whatever Dask raises while starting is one line, no traceback
            loop_not_started = isinstance(e, AssertionError) and not str(e)
            if loop_not_started and tries < _LOOP_START_TRIES:
                tries += 1
                continue
            why = " ".join(str(e).split()) or f"{type(e).__name__} in Dask"
            if loop_not_started:
                why = f"Dask's IO-loop thread did not start within 10 s in {tries} tries (a busy machine?)"
            raise BatchUnavailable(f"{failed}: {why}") from None


#: what the refusal calls standard descriptors
_STD_NAMES = {0: "standard input", 1: "standard output", 2: "standard error"}


def _readable(fd: int) -> bool:
    """False only when ``fd`` is open write-only (a pipe's writing end, a file opened for writing); True when it
    is readable or not open here (``<(…)``'s descriptor is the shell's, open in the command it starts)."""
    import fcntl

    try:
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError:
        return True
    return mode != os.O_WRONLY


def descriptor_refusal(paths: Sequence[str]) -> str | None:
    """Why ``paths`` cannot be replayed by ``run_batch``, or None: the first PATH that is a descriptor of this
    process (``-``, ``/dev/stdin``, ``/dev/fd/N``, ``<(…)``: ``own_descriptor``), which the workers, opening paths
    on their own, cannot read (``-`` read as an empty file). A named FIFO is a path: a local worker opens it. The
    single-stream command is advised for a descriptor it could read, not for standard output or error (1, 2) nor
    one open write-only."""
    for path in paths:
        fd = own_descriptor(path)
        if fd is None:
            continue
        what = _STD_NAMES.get(fd, f"file descriptor {fd}")
        refusal = f"batch reads capture files: its Dask workers do not share this process's {what} ({path})"
        if fd in (1, 2) or not _readable(fd):  # an output: nothing a single-stream replay could read either
            return refusal
        if fd == 0:
            return f"{refusal}; for a single stream use 'gro-replay -'"
        # the descriptor is this run's (the shell's <(…)): gone when the advice is read, so the command is named
        return f"{refusal}; for a single stream give it to gro-replay itself ('gro-replay <(…)', not batch)"
    return None


#: file names a directory given to ``batch`` contributes (``expand_directories``): what tcpdump, dumpcap and
#: editcap write, and those compressed: gzip (the reader takes it), and xz, zstd, bzip2, lz4, which the reader
#: refuses naming what to do (capture/reader.py ``OTHER_FORMATS``), so that they fail visibly, not vanish
_COMPRESSED = (".gz", ".xz", ".zst", ".bz2", ".lz4")
CAPTURE_SUFFIXES = tuple(base + comp for base in (".pcap", ".pcapng", ".cap") for comp in ("", *_COMPRESSED))


def expand_directories(paths: Sequence[str]) -> list[str]:
    """``paths`` with each directory replaced by the capture files directly in it (``CAPTURE_SUFFIXES``, case
    ignored; not hidden files, whose names start with ".", nor its subdirectories), sorted by name; other paths as
    given, in order.

    Raises ValueError (one line) for a directory that holds no such file, or that cannot be listed.
    """
    out: list[str] = []
    for path in paths:
        if not os.path.isdir(path):
            out.append(path)
            continue
        try:
            names = sorted(os.listdir(path))
        except OSError as e:
            raise ValueError(f"{path}: {e.strerror or e}") from None
        found = [
            os.path.join(path, n)
            for n in names
            if not n.startswith(".")
            and n.lower().endswith(CAPTURE_SUFFIXES)
            and os.path.isfile(os.path.join(path, n))
        ]
        if not found:
            raise ValueError(
                f"{path}: a directory with no capture file in it (*.pcap, *.pcapng, *.cap, also compressed)"
            )
        out.extend(found)
    return out


def run_batch(
    paths: Sequence[str],
    config: ReplayConfig,
    *,
    jobs: int | None = None,
    scheduler: str | None = None,
    on_done: Callable[[CaptureOutcome], None] | None = None,
    on_start: Callable[[], None] | None = None,
) -> list[CaptureOutcome]:
    """Replay every capture of ``paths`` on Dask workers; return their outcomes in the order of ``paths``.

    Args: paths: capture files (pcap/pcapng, optionally gzip), sent to the workers as given; config: one
    validated ReplayConfig for all; jobs: worker processes of the local cluster (default: CPU count, at most
    one per capture), one thread each; scheduler: address of a running ``distributed`` scheduler instead
    (``tcp://host:8786``); on_done: called with each outcome as it completes (any order); on_start: called when
    the cluster or scheduler is there, before the first capture is sent (a progress display starts there).
    Raises: BatchUnavailable (dask.distributed missing, scheduler unreachable, local cluster not started);
    ValueError (jobs < 1, jobs and scheduler both given, or a path that is this process's descriptor:
    ``descriptor_refusal``). Note: the local cluster's workers are spawned
    processes that import ``__main__`` again: a calling script guards it (``if __name__ == "__main__":``).
    """
    if jobs is not None and scheduler is not None:
        raise ValueError("jobs and scheduler are exclusive")
    if jobs is not None and jobs < 1:
        raise ValueError("jobs must be at least 1")
    refusal = descriptor_refusal(paths)
    if refusal is not None:
        raise ValueError(refusal)
    distributed = _distributed()
    config.validate()
    outcomes = [CaptureOutcome(p) for p in paths]
    # the local workers share this file system: a capture that cannot be opened fails here, as its worker would,
    # without starting a cluster for it (a remote scheduler's workers may see other files)
    todo = list(range(len(paths))) if scheduler is not None else _openable(outcomes, on_done)
    if not todo:
        return outcomes
    cluster = None
    try:
        if scheduler is not None:
            client = _dask_tried(
                lambda: distributed.Client(scheduler, timeout="10s"),
                f"cannot connect to scheduler {scheduler}",
            )
        else:
            cluster = _local_cluster(distributed, min(jobs or os.cpu_count() or 1, len(todo)))
            client = _dask_tried(
                lambda: distributed.Client(cluster), "cannot connect to the local Dask cluster"
            )
        with client:
            if on_start is not None:
                on_start()
            # pure=False: the same path given twice is replayed twice, like the serial runs would
            futures = client.map(replay_one, [paths[i] for i in todo], config=config, pure=False)
            index = {f.key: i for i, f in zip(todo, futures, strict=True)}
            for fut in distributed.as_completed(futures):
                i = index[fut.key]
                out = outcomes[i]
                if fut.status == "finished":
                    r = fut.result()
                    out.document, out.error, out.seconds = r["document"], r["error"], r["seconds"]
                else:
                    out.error = _future_error(out.path, fut)
                fut.release()
                if on_done is not None:
                    on_done(out)
    finally:
        if cluster is not None:
            cluster.close()
    return outcomes


def assign_out_files(outcomes: Sequence[CaptureOutcome], reserved: Sequence[str] = ()) -> None:
    """Name each capture's document file ``STEM.json`` (``STEM-2.json``... for repeated stems, in path order):
    ``out_file`` for a successful capture, ``failed_file`` for a failed one (it gets no document, and a file left
    there by an earlier run is removed), so that a capture's name does not depend on which others failed."""
    used = set(reserved)
    for out in outcomes:
        base = os.path.basename(out.path.rstrip("/\\")) or "capture"
        for ext in (*_COMPRESSED, ".pcapng", ".pcap", ".cap"):  # x.pcap.xz: x, as x.pcap.gz
            if base.lower().endswith(ext) and len(base) > len(ext):
                base = base[: -len(ext)]
        name, n = f"{base}.json", 1
        while name in used:
            n += 1
            name = f"{base}-{n}.json"
        used.add(name)
        if out.ok:
            out.out_file = name
        else:
            out.failed_file = name

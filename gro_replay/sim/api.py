"""The one-shot API (DPDK's ``rte_gro_reassemble_burst`` tier): ``replay_capture(path, config)`` and
``replay_frames(frames, config)`` run a ``Replayer`` over a capture or in-memory frames and return its ``Result``.
``replay_capture`` hands eligible captures to the batch path (pollcache.py), which gives the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from ..capture.chunks import PcapChunks
from ..capture.interface_chunks import SelectedChunks
from ..capture.interface_plan import may_hold_several
from ..capture.interface_plan import plan as plan_interfaces
from ..capture.pcapng_chunks import PcapngChunks
from ..capture.reader import DLT_EN10MB, open_capture
from ..capture.spool import spooled
from ..capture.ts_resolution import coarse_units
from ..packet.decode import Decoder
from .config import ReplayConfig
from .ingest import detect_tunnel_ports
from .notes import account_capture_end, resolution_note
from .replayer import Replayer, Result

if TYPE_CHECKING:
    from ..capture.interfaces import Selection
    from ..capture.reader import Capture
    from .ingest import InputStats


def replay_capture(
    path: str,
    config: ReplayConfig,
    on_deliver: Callable | None = None,
    progress: Callable[[int], None] | None = None,
) -> Result:
    """Replay a capture file through every kernel model in ``config``.

    Args: path: pcap/pcapng (optionally gzip), a FIFO or ``-`` (stdin), read once (with ``config.detect_tunnels``
    a stream is first copied to a temporary file, read twice as a file is and removed at the end:
    capture/spool.py ``spooled``); config: models and NIC/poll settings; on_deliver: observer of every
    ``netif_receive_skb`` (kernel name, stage, device, skb, ns); progress: called with the frame count (when it
    has them: ``bind_capture(cap)`` is given the open capture, ``copying`` is a stream's copy's ``on_copy``).
    A classic pcap of Ethernet frames (plain or gzip) and a pcapng file or stream (read once, a file as a stream,
    in the block walker's blocks with the records of interfaces not replayed marked,
    ``capture.interface_chunks.SelectedChunks``) take the batch path (pollcache.py)
    when sim/engine_path.py ``batch_reasons`` finds no reason against it: the configuration allows it, ``on_deliver`` is None
    or reads only what cached delivery events hold (``engine_path.served_from_events``: --trace, explain) and the
    batch path reads the input; same results, same deliveries in the same order. ``Result.engine`` says which path
    ran, why, and how many polls the cache answered (``engine``); ``Result.batch`` counts the batch path's polls.
    Raises: capture.reader.CaptureError (unreadable input), ConfigError.
    """
    if not config.detect_tunnels:
        return _replay(str(path), str(path), config, on_deliver, progress)
    # a progress display that shows the copy of a stream (cli/output.py ProgressReport.copying)
    on_copy = getattr(progress, "copying", None)
    with spooled(str(path), "--vxlan-port/--geneve-port auto", on_copy) as source:
        detected = detect_tunnel_ports(source, config, name=str(path))
        if detected:
            config = replace(
                config,
                vxlan_ports=config.vxlan_ports + tuple(sorted(detected.get("vxlan", {}))),
                geneve_ports=config.geneve_ports + tuple(sorted(detected.get("geneve", {}))),
            )
        return _replay(str(path), source, config, on_deliver, progress, detected)


def _replay(
    path: str,
    source: str,
    config: ReplayConfig,
    on_deliver: Callable | None,
    progress: Callable[[int], None] | None,
    detected: dict[str, dict[int, int]] | None = None,
) -> Result:
    """``replay_capture`` of the capture read from ``source`` (``path``, or a stream's copy named ``path``) with
    the tunnel ports ``detected`` by ``--vxlan-port auto`` (already in ``config``'s ports)."""
    # pollcache.py builds sim.ingest.Frames: imported here, so that importing pollcache first is no import cycle
    from ..pollcache import BatchReplay
    from .engine_path import batch_reasons

    rep = Replayer(config, on_deliver)
    rep.input.tunnel_ports_detected = detected or {}
    # first: a missing or unreadable file is a CaptureError (one line)
    with open_capture(source, name=path, digest=config.digest) as cap:
        rep.input.path = path
        if progress is not None and hasattr(progress, "bind_capture"):
            progress.bind_capture(cap)  # a progress display that shows bytes read against the file's size
        records: Iterable[tuple] = cap if progress is None else counting(cap, progress)
        reasons = batch_reasons(config, on_deliver, cap, None)
        sel, records = select_interfaces(path, cap, config, rep.input, records, batch=not reasons)
        if not reasons:
            br = BatchReplay(rep)
            # a pcapng or Linux cooked capture sorted by interface as it is read: the batch path reads its blocks,
            # the records of other interfaces marked as skipped (each keeps its capture index: skb addresses, trace
            # times), cooked records as Ethernet frames
            blocks = PcapngChunks(cap, br.block) if cap.format == "pcapng" else PcapChunks(cap, br.block)
            limit = None if rep.reseg is None else rep.reseg.limit  # longer frames: decoded one by one
            packed = (
                SelectedChunks(sel, cap, blocks, config.vxlan_ports, config.geneve_ports, limit)
                if may_hold_several(cap)
                else None
            )
            br.run(cap, progress, reader=packed)
            rep.batch = br.counts()
            rep.engine = engine(
                reasons, rep.batch["polls_cached"] + rep.batch["polls_simulated"], rep.batch["polls_cached"]
            )
        else:
            rep.run_polls(rep.decoded(records))
            rep.engine = engine(reasons, rep.polls_run, 0)
        rep.input.digests = {config.digest: cap.hexdigest()}  # of the bytes read: a pipe is never reopened
        account_selection(cap, sel, rep.input)
        # the replayed interfaces' timestamp units (pcapng: the interfaces with frames that were replayed)
        replayed = [
            k[0] for k, st in sel.by_key.items() if st.frames and (sel.chosen is None or k in sel.chosen)
        ]
        coarse = coarse_units(cap, replayed) if rep.input.frames_replayed else []
    rep.finish()
    result = rep.result()
    note = resolution_note(coarse, config)
    if note:  # after the notes on what the capture holds: a note on how its times are read
        result.input.notes.append(note)
    return result


def select_interfaces(
    path: str,
    cap: Capture,
    config: ReplayConfig,
    inp: InputStats,
    records: Iterable[tuple],
    batch: bool = False,
) -> tuple[Selection, Iterable[tuple]]:
    """The interface selection of an open capture (capture/interfaces.py ``plan``: ``config.interface``, else the
    device of the first tunnel frame) and its records with those of the interfaces not replayed counted as skipped
    in ``inp`` (``Selection.filter``; ``records`` unchanged for a capture that holds one interface), one rule for
    the replay and the kernel backend (validate.py ``load_capture``). ``batch``: the batch path reads the records
    (``plan``'s walk of a one-interface pcapng is left to it). Raises CaptureError."""
    sel = plan_interfaces(
        path, cap, lambda: Decoder(config.vxlan_ports, config.geneve_ports), config.interface, batch=batch
    )
    if may_hold_several(cap):
        records = sel.filter(cap, records, inp)
    return sel, records


def account_selection(cap: Capture, sel: Selection, inp: InputStats) -> None:
    """After the capture was read: how it ended (``account_capture_end``, of the replayed interfaces' records),
    an ``--interface`` that matched nothing (``Selection.check``, raises CaptureError), the interfaces' note and,
    when there were several, ``inp.interfaces``."""
    account_capture_end(cap, inp, sel.replayed_time_order())
    sel.check()  # an --interface that matched nothing, known once the records were read
    inp.notes.extend(sel.notes())
    if len(sel.by_key) > 1:
        inp.interfaces = sel.as_list()


#: why ``replay_frames`` takes the frame-by-frame path: the batch path reads blocks of a capture
FRAMES_REASON = "in-memory frames (replay_frames) are replayed one by one"


def engine(reasons: list[str], polls: int, polls_cached: int) -> dict:
    """The JSON document's ``engine`` object (``Result.engine``), the one statement of which path ran:
    ``{"path": "batch" | "frame-by-frame", "reasons": [...], "polls": N, "polls_cached": N}``. ``reasons``: why the
    batch path did not run (sim/engine_path.py ``batch_reasons``; [] when it ran); ``polls``: the polls of the replay, run
    through the kernels or answered from the cache (a poll of a schedule the kernels share counts once;
    with --gro-flush-timeout every kernel polls on its own timer and each kernel's polls count);
    ``polls_cached``: those answered from the cache (0 on the frame-by-frame path, which runs every poll)."""
    return {
        "path": "frame-by-frame" if reasons else "batch",
        "reasons": list(reasons),
        "polls": polls,
        "polls_cached": polls_cached,
    }


def counting(records: Iterable[tuple], progress: Callable[[int], None]) -> Iterator[tuple]:
    """``records`` passed through, calling ``progress`` with the count every 1024 records (the CLI's progress
    display; replay and the kernel backend's capture reading)."""
    for n, r in enumerate(records, 1):
        yield r
        if not n & 0x3FF:
            progress(n)


def replay_frames(
    frames: Iterable[tuple[int, bytes]], config: ReplayConfig, on_deliver: Callable | None = None
) -> Result:
    """Replay in-memory Ethernet frames ``(ts_ns, frame)`` (tests, synth). Same semantics as ``replay_capture``."""
    rep = Replayer(config, on_deliver)
    rep.run_polls(rep.decoded((ts, buf, len(buf), DLT_EN10MB) for ts, buf in frames))
    rep.engine = engine([FRAMES_REASON], rep.polls_run, 0)
    rep.finish()
    return rep.result()

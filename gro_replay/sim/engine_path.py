"""Which path a replay takes: the batch engine (pollcache.py) or the frame-by-frame reference path, and why.

``batch_reasons`` is the one decision (sim/api.py ``replay_capture``): the configuration (``config_reasons``),
an observer of deliveries (``observer_reasons``) and the input (``input_reasons``) each give short sentences naming
the option or input that keeps the batch path from running; none: the batch path runs. The JSON document's
``engine.reasons`` and the text report's ``engine:`` line print them.
"""

from __future__ import annotations

from ..capture.chunks import PcapChunks
from ..capture.cooked import COOKED_HEADER_LEN
from ..capture.interfaces import Selection
from ..capture.reader import DLT_EN10MB, Capture
from .config import ReplayConfig


def served_from_events(observer: object) -> bool:
    """True when ``observer`` (an ``on_deliver`` callable, or None) reads only what ``DeliveredSkb`` holds: it
    says so with a true ``served_from_events`` attribute (report/trace.py ``TraceWriter``, report/explain.py
    ``FlowDeliveries``)."""
    return observer is None or bool(getattr(observer, "served_from_events", False))


#: the poll models the batch path forms (``BatchReplay._polls``, ``_polls_rx_usecs``)
BATCH_POLL_MODELS = ("budget", "gap", "rx-usecs")
#: why an ``on_deliver`` observer that does not say what it reads keeps the frame-by-frame path
OBSERVER_REASON = (
    "an on_deliver observer reads more of each skb than cached delivery events hold (served_from_events)"
)


def observer_reasons(observer: object) -> list[str]:
    """Why ``observer`` (an ``on_deliver`` callable, or None) needs the frame-by-frame path: [] when it reads only
    what ``DeliveredSkb`` holds (``served_from_events``), else its ``frame_by_frame_reason`` (a short sentence naming
    its option, e.g. report/pcapout.py ``DevicePcaps``: "--write-pcap reads each skb's bytes") or
    ``OBSERVER_REASON``."""
    if served_from_events(observer):
        return []
    return [getattr(observer, "frame_by_frame_reason", None) or OBSERVER_REASON]


def config_reasons(config: ReplayConfig) -> list[str]:
    """Why the configuration keeps the batch path from running, one short sentence per condition naming its option
    ([]: none). The batch path needs every poll to end idle (module docstring: HZ < 1000, no gro_flush_timeout, no
    napi_defer_hard_irqs, one RX queue; Kernel: net/core/dev.c ``napi_poll``, ``napi_complete_done``), a poll model
    it forms (``BATCH_POLL_MODELS``), one checksum state per frame layout (no ``--nic`` preset), and every frame
    replayed and reported (``--flow`` and ``-f`` apply in ``Replayer.decoded``)."""
    out = []
    if not config.fast_path:
        out.append("fast_path is False (ReplayConfig: the reference path was asked for)")
    if config.hz >= 1000:
        out.append(
            f"--hz {config.hz}: HZ >= 1000 keeps GRO packets across full polls (napi_gro_flush(n, HZ >= 1000))"
        )
    if config.gro_flush_timeout_ns:
        out.append(
            f"--gro-flush-timeout {config.gro_flush_timeout_ns}: napi_complete_done keeps GRO packets for a timer "
            "poll (napi_gro_flush(n, !!timeout))"
        )
    if config.napi_defer_hard_irqs:
        # alone (no gro_flush_timeout) it arms no timer and every poll still ends idle; the batch path does not
        # take it all the same
        out.append(
            f"--napi-defer-hard-irqs {config.napi_defer_hard_irqs}: the batch path assumes no IRQ deferral "
            "(napi_complete_done)"
        )
    if config.rx_queues != 1:
        out.append(f"--rx-queues {config.rx_queues}: one NAPI per RX queue, polls interleaved across queues")
    if config.poll.kind not in BATCH_POLL_MODELS:
        out.append(
            f"poll model {config.poll.kind}: the batch path forms {', '.join(BATCH_POLL_MODELS)} polls"
        )
    if config.rx_csum == "nic":
        # nic.hw_checksums_ok decides each frame's checksum state from its headers
        out.append(f"--nic {config.nic} decides checksums per frame")
    if config.flow is not None:
        out.append("--flow selects flows frame by frame")  # the selector: config.flow
    if config.capture_filter is not None:
        out.append("-f filters frame by frame")  # the expression: config.capture_filter
    return out


def input_reasons(cap: Capture, sel: Selection | None) -> list[str]:
    """Why the batch path cannot read ``cap`` (an open ``capture.reader.Capture``) with interface selection ``sel``
    (``capture.interfaces.Selection``), one short sentence per condition ([]: it can). It reads a classic pcap
    with 16-byte record headers (``PcapChunks``), Ethernet or Linux cooked (``tcpdump -i any``: capture/cooked.py),
    and any pcapng file or stream, in its block walker's blocks (``PcapngChunks``); a pcapng or cooked capture with
    the records of the interfaces not replayed marked (``capture.interface_chunks.SelectedChunks``: the rule of
    ``Selection.filter``, which counts the others as it reads). ``sel`` is not read: the batch path reads a pcapng
    file once, as a stream (``capture.interface_plan.plan``)."""
    from ..capture.linktypes import DLT_NAMES

    if cap.format == "pcapng":
        return []
    out = []
    if not PcapChunks.supported(cap):
        lay = cap.pcap_layout
        out.append(f"pcap records with {lay[1] if lay else '?'}-byte headers (a modified pcap format)")
    if cap.linktype not in (DLT_EN10MB, *COOKED_HEADER_LEN):
        name = DLT_NAMES.get(cap.linktype)
        out.append(f"link type {cap.linktype}" + (f" ({name})" if name else "") + " (pcap, not Ethernet)")
    return out


def batch_reasons(config: ReplayConfig, observer: object, cap: Capture, sel: Selection | None) -> list[str]:
    """Every reason the batch path cannot replay ``cap`` (``input_reasons``) with ``config`` (``config_reasons``)
    and ``observer`` (``observer_reasons``), in that order: the one decision of sim/api.py ``replay_capture``,
    which takes the batch path when the list is empty. JSON ``engine.reasons``, the text report's ``engine:``
    line."""
    return config_reasons(config) + observer_reasons(observer) + input_reasons(cap, sel)


def batch_eligible(config: ReplayConfig, sink_observed: bool) -> bool:
    """True when the configuration allows the batch path (``config_reasons`` is empty) and nothing observes single
    deliveries beyond what cached events give (``sink_observed``: an observer not ``served_from_events``)."""
    return not sink_observed and not config_reasons(config)


def batch_input(cap: Capture, sel: Selection | None) -> bool:
    """True when the batch path can read ``cap`` with selection ``sel`` (``input_reasons`` is empty)."""
    return not input_reasons(cap, sel)

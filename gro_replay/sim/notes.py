"""The input notes of a replay: facts about the capture a reader must know, one sentence each (``InputStats.notes``).

``tunnel_notes``: tunnel traffic on ports without a tunnel socket, ports ``auto`` found, or no VXLAN or Geneve traffic at all;
``capture_notes``: how the capture was taken (outer checksums that do not verify; frame sizes: sim/size_notes.py);
``account_capture_end``: what the capture's reader found (records longer than their declared snaplen, a truncated
capture); ``resolution_note``: a time-aware poll schedule on timestamps coarser than the nanosecond.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..capture.interfaces import SKIP_OTHER_INTERFACE
from ..capture.ts_resolution import Coarse, unit_words
from ..kernel.names import BACKEND_GENEVE_PORT
from ..packet.decode import (
    CLS_TUNNEL_OTHER,
    CLS_TUNNEL_TCP,
    SKIP_OUTGOING,
    SKIP_SNAPLEN,
    SKIP_TRUNCATED_RECORD,
)
from ..project import plural
from ..report.verdict.input_words import filtered_text
from ..report.verdict.words import WHOLE_FRAMES_HINT, hidden_text, unread_text
from .size_notes import size_notes
from .skipped import unread_count

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..capture.reader import Capture
    from ..capture.time_order import TimeOrder
    from ..packet.decode import Decoder
    from .config import ReplayConfig
    from .ingest import InputStats


def input_notes(
    inp: InputStats,
    config: ReplayConfig,
    unconfigured: Mapping[str, Mapping[int, int]],
    backend: bool = False,
    tunnel_read: int = 0,
) -> None:
    """The notes on tunnel ports and on how the capture was taken (``tunnel_notes``, ``capture_notes``) added to
    ``inp.notes`` after the frames were decoded, one rule for the replay (sim/replayer.py ``Replayer.result``) and
    the kernel backend (``backend``: validate.py ``kernel_result``, which sent the frames the replay would have
    replayed): ``unconfigured`` is the decoder's count of frames per tunnel kind and UDP port that parse as that
    tunnel on a port without its socket (packet/decode.py ``Decoder.unconfigured``); ``tunnel_read``: the
    backend's tunnel frames decoded, sent or not (a capture whose tunnel frames it could not send has tunnel
    traffic, none of it sent): the frames read that carry VXLAN or Geneve, on a configured port or not."""
    inp.tunnel_ports_not_configured = {k: dict(v) for k, v in unconfigured.items()}
    for note in tunnel_notes(inp, config, backend, tunnel_read) + capture_notes(inp, config, backend):
        if note not in inp.notes:
            inp.notes.append(note)


def tunnel_notes(
    inp: InputStats, config: ReplayConfig, backend: bool = False, tunnel_read: int = 0
) -> list[str]:
    """The input notes about tunnel ports: traffic that parses as VXLAN/Geneve on ports without a tunnel socket
    (with the option that decodes it: ``unconfigured_text``), ports ``auto`` found, or that the capture holds no
    tunnel traffic. ``backend``: said of the kernel backend's run (its options, its devices), whose ``tunnel_read``
    tunnel frames, when none was sent, are said not sent (``kernel_backend:`` skips), not absent."""
    notes = []
    for kind, ports in sorted(inp.tunnel_ports_detected.items()):
        found = ", ".join(f"{p} ({n:,} {plural(n, 'frame')})" for p, n in sorted(ports.items()))
        notes.append(
            f"{_TUNNEL_NAME[kind]} found on UDP port {found} by a first read of the capture ({_PORT_OPTION[kind]} "
            "auto or --detect-tunnels); decoded there"
        )
    for kind, ports in sorted(inp.tunnel_ports_not_configured.items()):
        notes.extend(unconfigured_text(kind, p, n, backend) for p, n in sorted(ports.items()))
    replayed = inp.classes.get(CLS_TUNNEL_TCP) or inp.classes.get(CLS_TUNNEL_OTHER)
    hidden = hidden_text(inp, hint=False)  # capture_notes' snaplen note says how to get whole frames
    if hidden and (replayed or notes):
        # tunnel frames replayed (or other notes on tunnel ports) and others skipped: the counts cover the replayed
        notes.append(f"not in the counts: {hidden}")
    elif not replayed and not notes and backend and tunnel_read:
        unsent = ", ".join(
            f"{k} {n:,}" for k, n in sorted(inp.skipped.items()) if k.startswith("kernel_backend:")
        )
        notes.append(
            f"no VXLAN or Geneve traffic sent: the kernel backend could not send the {tunnel_read:,} "
            f"{plural(tunnel_read, 'frame')} read that carry VXLAN or Geneve ({unsent or hidden})"
        )
    elif not replayed and not notes:
        # frames the capturing host sent are said with the others read (the note's tail), not as tunnel traffic
        # left unseen: no receive path's GRO sees them (newcomer39)
        notes.append(_no_tunnel_note(inp, config, hidden_text(inp, hint=False, received=True)))
    return notes


#: the tunnel kinds' names and the replay options that configure their ports
_TUNNEL_NAME = {"vxlan": "VXLAN", "geneve": "Geneve"}
_PORT_OPTION = {"vxlan": "--vxlan-port", "geneve": "--geneve-port"}


def unconfigured_text(kind: str, port: int, n: int, backend: bool = False) -> str:
    """The note on ``n`` frames to UDP ``port`` that parse as tunnel ``kind`` (``"vxlan"``, ``"geneve"``) where no
    such port is configured: the replay replays them as plain UDP, as a kernel without that tunnel socket (net/ipv4
    udp.c: no encap_rcv on the socket's port, so no udp_gro_receive callback either: udp_offload.c
    ``udp_gro_receive`` finds no tunnel socket) receives them, and says the option that decodes them; the kernel
    backend (``backend``) sent them so, and the running kernel received them so: its ``--vxlan-port`` makes a vxlan
    device there, its geneve device is on ``BACKEND_GENEVE_PORT`` only (the replay's --geneve-port decodes others)."""
    name, opt = _TUNNEL_NAME[kind], _PORT_OPTION[kind]
    what = f"{n:,} {plural(n, 'frame')} to UDP port {port} {'parses' if n == 1 else 'parse'} as {name}"
    if not backend:
        return (
            f"{what}, but no {name} port is configured there: replayed as plain UDP (not_tunnel), as a kernel "
            f"without that tunnel socket would; pass {opt} {port} to decode {'it' if n == 1 else 'them'} (or {opt} "
            "auto, which finds such "
            "ports in a first read of the capture)"
        )
    sent = (
        f"sent as plain UDP (not_tunnel), and the running kernel, without a tunnel socket there, received "
        f"{'it' if n == 1 else 'them'} so"
    )
    if kind == "vxlan":
        return f"{what}, but the kernel backend made no vxlan device there: {sent}; pass --vxlan-port {port} to make one"
    return (
        f"{what}, but the kernel backend makes its geneve device on UDP port {BACKEND_GENEVE_PORT} only (where the "
        f"running kernel has Geneve): {sent}; the replay decodes {'it' if n == 1 else 'them'} (gro-replay CAPTURE "
        f"--geneve-port {port})"
    )


def fragments_text(inp: InputStats, backend: bool = False) -> str:
    """The note on the first fragments of outer datagrams to a tunnel port (``InputStats.fragments_to_tunnel``), or
    "": IP reassembly is not modelled, so their fragments are frames of no tunnel here, where a kernel reassembles
    each datagram whose fragments all arrive and decapsulates it."""
    n = inp.fragments_to_tunnel
    if not n:
        return ""
    who = (
        "this report reads the frames as the replay does, so its tunnel-stage counts and verdict leave out what the "
        "running kernel reassembled of them"
        if backend
        else "the replay counts their fragments as frames of no tunnel and the stack drops them "
        "(fragment_not_reassembled), where a kernel reassembles each datagram whose fragments all arrive (ip_defrag, "
        "ipv6_frag_rcv) and decapsulates it; the counts leave them out"
    )
    return (
        f"{n:,} {plural(n, 'frame')} {'is the first fragment' if n == 1 else 'are first fragments'} of outer "
        f"datagrams to a tunnel port (each with its whole UDP header): IP fragment reassembly is not modelled: {who} "
        "(JSON input.fragments_to_tunnel)"
    )


def _no_tunnel_note(inp: InputStats, config: ReplayConfig, hidden: str) -> str:
    """The note of a replay without tunnel traffic: tunnel frames skipped (cut short, malformed: ``hidden``), or why
    nothing was looked at, or that no frame goes to a tunnel port, said of the frames whose headers were read
    (sim/skipped.py: a frame cut short is read by its headers; one whose bytes end before its UDP port is not)."""
    ports = ", ".join(map(str, config.vxlan_ports)) or "none"
    gports = ", ".join(map(str, config.geneve_ports)) or "none"
    filtered = filtered_text(getattr(inp, "filtered", {}))
    cut = inp.skipped.get(SKIP_TRUNCATED_RECORD, 0)
    snap_cut = inp.skipped.get(SKIP_SNAPLEN, 0)
    unread = unread_text(inp)
    if cut and inp.frames_read == cut:
        # the capture ends inside its first record: there is no frame to say anything of
        return "no VXLAN or Geneve traffic replayed: the capture is truncated before its first complete frame"
    if hidden:
        return f"no VXLAN or Geneve traffic replayed: {hidden}"
    if inp.fragments_to_tunnel:  # said by its own note (capture_notes): no frame is whole tunnel traffic
        return "no VXLAN or Geneve traffic replayed whole: what goes to a tunnel port came fragmented"
    sent = inp.skipped.get(SKIP_OUTGOING, 0)
    if sent and inp.frames_read == cut + sent:
        return "no VXLAN or Geneve traffic replayed: every frame read was sent by the capturing host (outgoing), none received"
    if filtered and not inp.frames_replayed:
        # the filter removed what the capture holds: nothing was left to look at, so nothing is said of it
        # (-f is a BPF filter on the frames as captured, i.e. on the outer headers of tunnelled frames)
        return (
            f"no VXLAN or Geneve traffic replayed: {filtered}, none left to replay (-f matches the frames as the NIC "
            "hands them up: a tunnelled frame by its outer headers, without an FCS the reader removed)"
        )
    # a frame cut short goes to the port its headers say; whether one read before its UDP port does is unknown
    which = "whose headers could be read " if unread else ""
    read_cut = snap_cut - unread_count(inp, SKIP_SNAPLEN)
    by_headers = f"; the {read_cut:,} cut short by their headers: snaplen_cut" if read_cut else ""
    none = "none decoded" if snap_cut or unread else "none"
    if snap_cut and inp.frames_read == cut + snap_cut:
        # every frame was cut short: none was decoded, what their headers say is all there is
        if not read_cut:
            return (
                "no VXLAN or Geneve traffic replayed: every frame read was cut short (snaplen_cut) before its UDP port, none "
                "was decoded: whether they are tunnel traffic is unknown"
            )
        return (
            f"no VXLAN or Geneve traffic replayed: every frame read was cut short (snaplen_cut), none was decoded; no frame "
            f"{which}goes to a configured tunnel port (VXLAN {ports}; Geneve {gports}){f' ({unread})' if unread else ''}"
        )
    # another interface's frames are said in the interfaces' note (capture/interfaces.py); those the host sent
    # were not read (sim/skipped.py received_frame)
    where = " on the interface replayed" if inp.skipped.get(SKIP_OTHER_INTERFACE) else ""
    which = f"received {which}" if sent else which
    tail = "; ".join(
        ([unread] if unread else [])
        + (
            [f"the {sent:,} {plural(sent, 'frame')} the capturing host sent not read: outgoing"]
            if sent
            else []
        )
    )
    return (
        f"no VXLAN or Geneve traffic{where}{f' among the frames replayed ({filtered})' if filtered else ''}"
        f"{truncated_text(inp)}: no frame {which}goes to a configured tunnel port (VXLAN {ports}; Geneve {gports}"
        f"{by_headers}) and {none} parses as VXLAN or Geneve on another UDP port{f' ({tail})' if tail else ''}"
    )


def both_ways(decoder: Decoder) -> list[dict]:
    """JSON ``input.tunnel_both_ways``: each pair of outer hosts that tunnel flows run both ways between (packet/
    decode.py ``Decoder.outer_pairs``, with the frames replayed each way), as ``{"hosts": [a, b], "frames": [to a,
    to b]}``, ``a`` the host more frames go to (the first in text order on a tie): the receiving side of a capture
    of one host's link; pairs by frames, most first."""
    pairs, frames = decoder.outer_pairs, decoder.pair_frames
    out = []
    for (src, dst), p in pairs.items():
        q = pairs.get((dst, src))
        if q is None:
            continue
        # each pair once, from the side of its a: dst (the text order inverted: the first wins a tie)
        if (frames[p], src) > (frames[q], dst):
            out.append({"hosts": [dst, src], "frames": [frames[p], frames[q]]})
    return sorted(out, key=lambda e: (-sum(e["frames"]), e["hosts"]))


def both_ways_text(inp: InputStats) -> str:
    """The note on tunnel traffic that runs both ways between two outer hosts (``InputStats.tunnel_both_ways``), or
    "" when none does: no one host's NIC receives both ways."""
    pairs = inp.tunnel_both_ways
    if not pairs:
        return ""
    (a, b), (fa, fb) = pairs[0]["hosts"], pairs[0]["frames"]
    # libpcap reads past an outer VLAN tag only after ``vlan`` (which moves the offsets for what follows it): one
    # alternative per depth of tags the frames carry, each inside the one before
    host = bpf = f"dst host {a}"
    for depth in range(inp.outer_tag_depth):
        bpf = f"{host} or (vlan and {f'({bpf})' if depth else bpf})"
    more = len(pairs) - 1
    others = f", and between {more:,} more {plural(more, 'pair')} of hosts" if more else ""
    return (
        f"tunnel traffic runs both ways between outer {a} and {b} ({fa:,} {plural(fa, 'frame')} to {a}, {fb:,} to "
        f"{b}){others}: a capture of one host's link holds the frames it sent as well as those it received, and "
        "a host's NIC receives one way only (what it sends leaves through TSO/GSO, never through its GRO); the "
        "replay takes every frame as received by one NIC, so the polls and GRO lists both ways share here are no "
        f"one host's: -f '{bpf}' replays what {a} received (the bpf extra: pip install 'gro-replay[bpf]'; JSON "
        "input.tunnel_both_ways)"
    )


def capture_notes(inp: InputStats, config: ReplayConfig, backend: bool = False) -> list[str]:
    """Notes on how the capture was taken: records whose captured length exceeds their stated wire length, outer
    checksums that do not verify, records cut short (``snaplen_cut``), then the frame sizes (sim/size_notes.py).
    ``backend``: said of the kernel backend's run (the running kernel checked the checksums, not the models)."""
    kernels = "the running kernel" if backend else "the kernels"
    notes = []
    cut = inp.skipped.get(SKIP_SNAPLEN, 0)
    if cut:
        # all a record says is that it holds less than the frame (captured < original length): a capture taken
        # with a small snap length and a copy that cut the records at the file's declared one look alike
        notes.append(
            f"{cut:,} {plural(cut, 'record')} {'holds' if cut == 1 else 'hold'} fewer bytes than "
            f"{'its frame' if cut == 1 else 'their frames'} on the wire (captured length < original length): "
            f"skipped (snaplen_cut), a frame cut short cannot be checksummed; {WHOLE_FRAMES_HINT}"
        )
    if inp.caplen_over_orig_len:
        # pcap (draft-ietf-opsawg-pcap, Packet Record) and pcapng (draft-ietf-opsawg-pcapng, Enhanced Packet
        # Block): the original length is the packet's length on the wire, the captured length at most that (less
        # when the snapshot length cut it); the drafts let readers read files that break this (SHOULD, not MUST).
        # Wireshark flags it (pcap.capt_len_larger_than_orig_len) and shows the captured bytes; the replay uses them
        n = inp.caplen_over_orig_len
        notes.append(
            f"{n:,} {plural(n, 'record')} {'states' if n == 1 else 'state'} an original (wire) length smaller than "
            "the bytes captured (a fault of the program that wrote the capture: the formats require original >= "
            f"captured): {'it was' if n == 1 else 'they were'} replayed as captured (JSON input.caplen_over_orig_len)"
        )
    if inp.outer_csum_bad:
        n = inp.outer_csum_bad
        if config.rx_csum == "none":
            # CHECKSUM_NONE: udp_rcv checks them in software and drops them (UdpInCsumErrors)
            how = f"--rx-csum none has {kernels} check them in software and drop them (udp_rcv, UdpInCsumErrors)"
        elif config.rx_csum == "nic":
            # a preset hands a checksum its hardware found wrong as CHECKSUM_NONE, or (COMPLETE drivers) the sum for
            # the stack to check (kernel/nic.py ``bad_csum_none``): udp_rcv finds it wrong either way
            how = (
                f"{config.rx_csum_words()} hands them up as that driver does, so the kernels check them in software "
                "and drop them (udp_rcv, UdpInCsumErrors); --rx-csum unnecessary replays them as a NIC that had "
                "verified them would"
            )
        else:
            how = (
                f"{config.rx_csum_words()} {'sent' if backend else 'replays'} them as that checksum state says; "
                f"--rx-csum none has {kernels} check them in software and drop them (udp_rcv, UdpInCsumErrors)"
            )
        notes.append(
            f"{n:,} tunnel {plural(n, 'frame')} {'carries' if n == 1 else 'carry'} an outer UDP checksum that does "
            "not verify, typical of a capture taken on the sending host before TX checksum offload filled it in; "
            f"a NIC would not have reported {'it' if n == 1 else 'them'} as verified: {how}"
        )
    # the kernel backend sends the frames to one outer destination (oracle/replay.py outer_destination_differs)
    both = "" if backend else both_ways_text(inp)
    return notes + size_notes(inp, config) + [t for t in (both, fragments_text(inp, backend)) if t]


def over_snaplen_text(over: list[dict[str, int]], fmt: str) -> str:
    """The note on records longer than the snaplen their capture declares (``InputStats.caplen_over_snaplen``: one
    ``{"snaplen", "records", "longest"}`` entry per declared snaplen exceeded, bytes) of a capture of format ``fmt``
    (``"pcap"``, ``"pcapng"``), e.g. "3 records are longer than the snaplen the pcap file header declares (1,500
    bytes; the longest record 1,514 bytes): …"."""
    n = sum(e["records"] for e in over)
    if len(over) == 1:
        snap = over[0]["snaplen"]
        sizes = f"{snap:,} {plural(snap, 'byte')}; {'the record' if n == 1 else 'the longest record'} {over[0]['longest']:,} bytes"
    else:  # pcapng interfaces that declare different snaplens
        sizes = "; ".join(
            f"{e['snaplen']:,} {plural(e['snaplen'], 'byte')}: {e['records']:,} {plural(e['records'], 'record')}, "
            f"the longest {e['longest']:,} bytes"
            for e in over
        )
    # Readers that take such records whole read them whole (Wireshark flags them:
    # pcap.capt_len_larger_than_snap_len). libpcap (tcpdump -r, checked with 1.10.3 / tcpdump 4.99.3) does not: it
    # cuts a pcap record to the file header's snaplen as it reads it (sf-pcap.c); in pcapng it refuses an enhanced
    # packet block longer than its interface's snaplen (sf-pcapng.c: "invalid packet capture length N, bigger than
    # snaplen of S"), which ends tcpdump's reading there, and cuts a simple packet block to it. (It also refuses a
    # pcapng file whose interfaces declare different snaplens before any record.)
    if fmt == "pcapng" and len(over) > 1:
        where = "their pcapng interfaces declare"
        copy = (
            "tcpdump -r refuses this file before its first record (its interfaces declare different snaplens), and "
            "of a file it reads refuses an enhanced packet block longer than its interface's snaplen"
        )
    elif fmt == "pcapng":
        where = f"{'its' if n == 1 else 'their'} pcapng interface declares"
        copy = (
            "tcpdump -r does not copy such records whole: it refuses an enhanced packet block longer than its "
            "interface's snaplen (invalid packet capture length, bigger than snaplen), which ends its reading, and "
            "cuts a simple packet block to it"
        )
    else:
        where = "the pcap file header declares"
        copy = (
            "tcpdump -r cuts such records to that snaplen as it reads them, so a copy through it (tcpdump -r IN "
            "-w OUT) holds them cut, and a replay of the copy skips them (snaplen_cut)"
        )
    return (
        f"{n:,} {plural(n, 'record')} {'is' if n == 1 else 'are'} longer than the snaplen {where} ({sizes}): "
        f"gro-replay reads them as captured; {copy} (JSON input.caplen_over_snaplen)"
    )


#: (ns per unit, unit, decimals, the value from which the next unit reads better)
_STEP_UNITS = (
    (1e3, "µs", 3, 1000),
    (1e6, "ms", 3, 1000),
    (1e9, "s", 3, 60),
    (60e9, "min", 1, 60),
    (3600e9, "h", 1, 24),
    (86_400e9, "days", 1, 730.5),
    (31_557_600e9, "years", 1, None),
)


def step_words(ns: int) -> str:
    """A step back in time (ns) in the unit that reads: "25.000 µs", "3.200 ms", "12.500 s", "1.0 h", "51.2 years"
    (two joined captures of different days step back by their distance); a value that rounds to the next unit's
    one is said in it ("1.000 s", not "1,000.000 ms")."""
    for scale, unit, decimals, limit in _STEP_UNITS:
        value = round(ns / scale, decimals)
        if limit is None or value < limit:
            return f"{value:,.{decimals}f} {unit}"
    raise AssertionError("the last unit has no limit")


def account_capture_end(
    cap: Capture, inp: InputStats, replayed: tuple[TimeOrder, list[str]] | None = None
) -> None:
    """How the capture ended, and what its reader counted as it read, into the input accounting, one rule for every
    reader (pcap, pcapng, gzip or not, a file or a pipe): the records longer than their declared snaplen
    (``InputStats.caplen_over_snaplen``, capture/snaplen.py) and their note (``over_snaplen_text``); the records
    read without their FCS (``InputStats.frames_fcs_stripped``, ``frames_fcs_cut``: capture/fcs.py; their note is
    sim/size_notes.py's); records timestamped before one read before them (capture/time_order.py), in a note (``time_order_text``): of the
    replayed interface's records (``replayed``: capture/interfaces.py ``Selection.replayed_time_order``) when a
    selection handed the records on, else of every record the reader read (all replayed); a record cut
    short at its end is a frame read and skipped (``truncated_record``), and a note says the capture is truncated
    and what was read before the cut; gzip data that ends before its end-of-stream marker (RFC 1952 trailer) is a
    truncated capture too, whose records before the cut were all read (only a record cut with it is counted)."""
    inp.caplen_over_snaplen = cap.caplen_over_snaplen.as_list()
    inp.frames_fcs_stripped, inp.frames_fcs_cut = cap.fcs_stripped, cap.fcs_cut
    if inp.caplen_over_snaplen:
        inp.notes.append(over_snaplen_text(inp.caplen_over_snaplen, cap.format))
    order, labels = (cap.time_order, []) if replayed is None else replayed
    if order.behind:
        inp.notes.append(time_order_text(order, labels))
    complete = inp.frames_read
    if cap.truncated_records:
        inp.frames_read += cap.truncated_records
        inp.skipped[SKIP_TRUNCATED_RECORD] += cap.truncated_records
    if not cap.truncated_records and not cap.stream_cut:
        return
    how = "its gzip data ends before the end-of-stream marker" if cap.stream_cut else "it ends"
    records = f"{complete:,} complete {plural(complete, 'record')}"
    if cap.truncated_records:
        read = (
            ", so no complete record was read;"
            if not complete
            else f"; the {records} before the cut {'was' if complete == 1 else 'were'} read,"
        )
        inp.notes.append(
            f"the capture is truncated (cut short, or still being written): {how} inside record {complete + 1:,}"
            f"{read} the cut one is skipped (truncated_record)"
        )
    else:
        inp.notes.append(
            f"the capture is truncated (cut short, or still being written): {how}, after {records}: every "
            "record before the cut was read in full"
        )


def time_order_text(order: TimeOrder, labels: list[str]) -> str:
    """The note on records timestamped before one read before them (``order.behind`` > 0): of the capture (no
    ``labels``: every record read was replayed) or of the replayed interfaces (``labels``, ``Selection``'s: other
    interfaces' records were read and not replayed, and their times are no part of the count)."""
    n = order.behind
    them = "it" if n == 1 else "them"
    by = f"(by up to {step_words(order.largest_step_back_ns)})"
    causes = "captures joined with mergecap -a, a clock step"
    several = f"{causes}, several interfaces' clocks"
    if not labels:
        what = (
            f"{n:,} {plural(n, 'record')} {'is' if n == 1 else 'are'} timestamped before a record read before {them} "
            f"{by}: the capture is not in time order ({several})"
        )
    else:
        one = len(labels) == 1
        which = f"{' and '.join(labels)}, the {'interface' if one else 'interfaces'} replayed,"
        what = (
            f"{n:,} {plural(n, 'record')} of {which} {'is' if n == 1 else 'are'} timestamped before one of "
            f"{'its' if one else 'their'} records read before {them} {by}: {'its' if one else 'their'} frames are "
            f"not in time order ({causes if one else several})"
        )
    return (
        f"{what}; the replay takes a frame that goes back in time as arriving at the latest time seen, so no poll "
        "goes back"
    )


def resolution_note(coarse: list[Coarse], config: ReplayConfig) -> str | None:
    """The note that the poll schedule follows timestamps coarser than the nanosecond, or None: when ``coarse``
    (capture/ts_resolution.py ``coarse_units``: the replayed frames' units above 1 ns) is empty, or when no poll
    boundary reads the times (``budget`` without ``--gro-flush-timeout``: ``weight`` frames a poll, whatever
    their times). ``gap:US`` compares each pause with US µs, ``rx-usecs:US`` polls US µs after a frame's time and
    takes the frames timed by then, the gro_flush_timeout hrtimer fires at a poll's time plus the timeout
    (net/core/dev.c ``napi_complete_done``, ``napi_watchdog``): each reads the times as the capture holds them."""
    readers = [f"the poll model {config.poll}"] if config.poll.reads_times else []
    if config.gro_flush_timeout_ns:
        readers.append("--gro-flush-timeout's timer")
    if not coarse or not readers:
        return None
    if len(coarse) == 1:
        (c,) = coarse
        what = f"the timestamps of {c.who} are held to {unit_words(c.unit_ns)} ({c.source})"
    else:
        units = "; ".join(f"{c.who} to {unit_words(c.unit_ns)} ({c.source})" for c in coarse)
        what = f"the replayed interfaces' timestamps are held to more than 1 ns ({units})"
    return (
        f"{what}: the poll boundaries of {' and of '.join(readers)} follow them, so a nanosecond capture of the same "
        "traffic can poll, and so merge, differently (a copy through tcpdump -w holds microseconds unless given "
        "--time-stamp-precision=nano)"
    )


def truncated_text(inp: InputStats) -> str:
    """ " in the N complete frames read before the capture's cut" when the capture is truncated
    (``account_capture_end``), else "": what a statement about the whole capture is limited to."""
    cut = inp.skipped.get(SKIP_TRUNCATED_RECORD, 0)
    if not cut:
        return ""
    n = inp.frames_read - cut
    return f" in the {n:,} complete {plural(n, 'frame')} read before the capture's cut"

"""The input notes about frame sizes (sim/notes.py ``capture_notes``): super-frames split at ``--mtu``
(``split_text``, ``above_mtu_text``), frames larger than it replayed as captured (``kept_text``), and frames longer
than the one RX buffer a --nic preset's skb layout is built for (``long_frames_text``), and the bytes captured past
frames' IP datagrams (``trailer_notes``: an FCS, a trailer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..kernel.nic import NIC_PRESETS
from ..kernel.skbuff import ETH_FRAME_LEN, MAX_SKB_FRAGS
from ..project import plural
from ..resegment import IPV6_MIN_MTU, KEEP_WORDS, TCP_MIN_SND_MSS

if TYPE_CHECKING:
    from ..resegment import AboveMtu
    from .config import ReplayConfig
    from .ingest import InputStats


def size_notes(inp: InputStats, config: ReplayConfig) -> list[str]:
    """The notes of this module that apply, in order: split super-frames, frames kept whole, long frames, bytes
    past the datagrams."""
    texts = (
        split_text(inp, config),
        kept_text(inp, config),
        long_frames_text(inp, config),
        *trailer_notes(inp),
    )
    return [t for t in texts if t]


#: why GRO merges no frame that carries bytes past its IP datagram
_LENGTH_FLUSH = "GRO merges none of them (the IP length differs from the bytes present: inet_gro_receive, ipv6_gro_receive)"


def trailer_notes(inp: InputStats) -> list[str]:
    """The notes on bytes captured past the frames' own (their outer IP datagram, or Ethernet padding): FCSs the
    record readers removed (``InputStats.frames_fcs_stripped``, ``frames_fcs_cut``: capture/fcs.py), and trailers
    replayed (``InputStats.frames_past_datagram``, sim/skipped.py ``past_datagram``, by their bytes); [] when
    neither was met."""
    notes = []
    n, cut = inp.frames_fcs_stripped, inp.frames_fcs_cut
    if n or cut:
        whole = (
            f"{n:,} {plural(n, 'frame')} of the capture ended with {'its' if n == 1 else 'their'} Ethernet FCS (the "
            "last 4 bytes are the CRC-32 of the frame: captured at a tap, a mirror port or on a host with rx-fcs on)"
            if n
            else ""
        )
        cut_words = (
            f"{cut:,} {plural(cut, 'record')} of the capture {'was' if cut == 1 else 'were'} cut short by the snaplen "
            "within the FCS only (every byte before it captured, 4 bytes past them on the wire)"
            if cut
            else ""
        )
        notes.append(
            f"{'; '.join(t for t in (whole, cut_words) if t)}: read without it, as a NIC with rx-fcs off (every "
            f"driver's default) hands frames to the stack; on a host with rx-fcs on the stack gets it and "
            f"{_LENGTH_FLUSH} (JSON input.frames_fcs_stripped, input.frames_fcs_cut)"
        )
    past = inp.frames_past_datagram
    m = sum(past.values())
    if m:
        sizes = ", ".join(
            f"{b:,} {plural(b, 'byte')} ×{c:,}"
            for b, c in sorted(past.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        # the advice chops bytes off every record (-L: its original length too, else it reads as cut short): only
        # when every frame replayed carries the same number and none had an FCS removed (that too would go)
        every = (
            len(past) == 1
            and m == inp.frames_replayed
            and not (inp.frames_fcs_stripped or inp.frames_fcs_cut)
        )
        only = next(iter(past)) if every else 0
        chop = f": editcap -L -C -{only} IN OUT removes them" if only else ""
        notes.append(
            f"{m:,} {plural(m, 'frame')} replayed {'carries' if m == 1 else 'carry'} bytes past the outer IP "
            f"datagram and Ethernet padding that the capture does not show to be an FCS ({sizes}): replayed as "
            f"captured, so {_LENGTH_FLUSH} at the phys device, and ip_rcv_core trims them after; if the capture "
            f"added them (a packet broker's timestamp or port trailer), the receiving NIC never saw them{chop} "
            "(JSON input.frames_past_datagram)"
        )
    return notes


def split_text(inp: InputStats, config: ReplayConfig) -> str:
    """The note on super-frames split at ``--mtu`` (``InputStats.resegmented_frames``), or "" when none was: how many,
    into how many segments, the sender's partial outer checksums they carried, segments still above the MTU
    (``above_mtu_text``), and what to pass when the underlay carries such frames."""
    if not inp.resegmented_frames:
        return ""
    big = inp.largest_split
    jumbo = (
        f"if the underlay really carries frames this large (jumbo MTU), pass --mtu {big} or --resegment off "
        "(with --rx-csum unnecessary-tunnel when their inner TCP checksums are the sender's partial sums too, "
        "as on a host before TX offload: a receiving NIC would have verified both)"
        if big <= JUMBO_MAX
        else "no underlay MTU carries them (above 9216 bytes: BIG TCP or GRO aggregates)"
    )
    n = inp.resegmented_frames
    partial = inp.resegmented_csum_partial
    # the frames, not their segments, carry it: "it", "all 3" or "2 of those 5 frames"
    who = "it" if n == 1 else f"all {n:,}" if partial == n else f"{partial:,} of those {n:,} frames"
    csum = (
        f"; {who} {'carries' if partial == 1 else 'carry'} the sender's partial outer UDP checksum "
        "(CHECKSUM_PARTIAL, filled in by TX offload), not a bad one: each segment gets a computed checksum"
        if partial
        else ""
    )
    above = inp.above_mtu
    return (
        f"{n:,} {plural(n, 'frame')} larger than {mtu_words(config, inp)} (the largest outer IP packet "
        f"{big:,} bytes) {'was' if n == 1 else 'were'} split into {inp.segments_created:,} "
        f"{'' if above.segments else 'wire '}{plural(inp.segments_created, 'segment')}, taken for TSO/GSO or "
        f"GRO super-frames of the capturing host{csum}; {above_mtu_text(above, config, inp) + '; ' if above.segments else ''}"
        f"{jumbo}"
    )


def kept_text(inp: InputStats, config: ReplayConfig) -> str:
    """Why frames larger than ``--mtu`` were replayed as captured, not split (``InputStats.oversize_not_split``,
    resegment.py ``KEEP_WORDS``), or "" when none was: "4 frames larger than --mtu 1500 were replayed as captured,
    not split: 4 because the MSS would make segments smaller than a Linux sender ever does (…)"."""
    kept = inp.oversize_not_split
    n = sum(kept.values())
    if not n:
        return ""
    why = "; ".join(
        f"{c:,} because {KEEP_WORDS.get(k, k)} ({k})"
        for k, c in sorted(kept.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return (
        f"{n:,} {plural(n, 'frame')} larger than {mtu_words(config, inp)} {'was' if n == 1 else 'were'} replayed as "
        f"captured, not split: {why}"
    )


def long_frames_text(inp: InputStats, config: ReplayConfig) -> str:
    """With a --nic preset whose skb layout is a driver's (kernel/nic.py ``RxSkbLayout``, not veth's AF_PACKET
    one), the frames replayed longer than ``ETH_FRAME_LEN`` (``InputStats.frames_over_eth_frame_len``): the layout
    is the driver's for a full-sized frame of a 1500-byte MTU, and the RX buffers a driver may spread a longer
    one over (page frags) are not built, so where an aggregate reaches ``MAX_SKB_FRAGS`` and starts a frag_list
    may not be the driver's; "" when none was replayed or the layout is veth's (modelled: it pages from 4,080
    bytes, kernel/nic_skb.py)."""
    n = inp.frames_over_eth_frame_len
    preset = NIC_PRESETS.get(config.nic) if config.nic else None
    if not n or preset is None or preset.rx_skb.af_packet:
        return ""
    return (
        f"{n:,} {plural(n, 'frame')} replayed {'is' if n == 1 else 'are'} longer than {ETH_FRAME_LEN:,} bytes "
        f"(ETH_FRAME_LEN: a 1500-byte MTU's full-sized frame, VLAN tags aside): --nic {config.nic} lays out "
        f"{'its skb' if n == 1 else 'their skbs'} as that driver does a full-sized frame of a 1500-byte MTU; with a "
        "larger MTU the driver may spread a frame over several RX buffers (page frags), which is not modelled, so "
        f"where an aggregate reaches MAX_SKB_FRAGS ({MAX_SKB_FRAGS}) and starts a frag_list (which the tunnel "
        "device flushes from v6.1) may not be the driver's"
    )


def mtu_words(config: ReplayConfig, inp: InputStats) -> str:
    """``--mtu N`` as the resegmenter applied it: "--mtu 1500", or when it split outer IPv6 super-frames at IPv6's
    smallest link MTU, above ``--mtu`` (``inp.split_at_ipv6_min_mtu``), "--mtu 1000 (1,280 for outer IPv6: RFC 8200
    §5)" (resegment.py ``Resegmenter.mtu6``, ``IPV6_MIN_MTU``)."""
    if inp.split_at_ipv6_min_mtu:
        return f"--mtu {config.mtu} ({IPV6_MIN_MTU:,} for outer IPv6: RFC 8200 §5)"
    return f"--mtu {config.mtu}"


def above_mtu_text(above: AboveMtu, config: ReplayConfig, inp: InputStats) -> str:
    """What ``--resegment MSS`` made that a link of ``--mtu`` does not carry (``InputStats.above_mtu``, resegment.py
    ``AboveMtu``): "8 of the segments are larger than --mtu 1500 too (outer IP packets of up to 3,102 bytes):
    --resegment 3000 is more TCP payload than the 1,398 bytes --mtu 1500 leaves with their headers, so GRO here
    receives segments no link of that MTU carries (--resegment 1398 or less splits them to wire size; a link that
    carries them needs --mtu 3102)"."""
    n = above.segments
    fit = above.fit or 0  # None: no MSS fits
    if fit >= above.floor:
        room = (
            f"is more TCP payload than the {fit:,} bytes {mtu_words(config, inp)} leaves with their headers"
        )
        smaller = f"--resegment {fit} or less splits them to wire size"
    else:  # what the MTU leaves is below the smallest full segment a Linux sender makes (resegment.min_payload)
        opts = TCP_MIN_SND_MSS - above.floor
        least = (
            f"the {TCP_MIN_SND_MSS}-byte TCP_MIN_SND_MSS"
            if not opts
            else f"the {above.floor} payload bytes the {TCP_MIN_SND_MSS}-byte TCP_MIN_SND_MSS leaves with {opts} "
            "bytes of TCP options"
        )
        room = (
            f"is more TCP payload than --mtu {config.mtu} leaves with their headers ("
            + (f"{fit:,} bytes" if fit > 0 else "none")
            + f", below {least})"
        )
        smaller = "no --resegment splits them to wire size"
    return (
        f"{n:,} of the segments {'is' if n == 1 else 'are'} larger than --mtu {config.mtu} too (outer IP packets of "
        f"up to {above.largest:,} bytes): --resegment {config.resegment} {room}, so GRO here receives segments no "
        f"link of that MTU carries ({smaller}; a link that carries them needs --mtu {above.largest})"
    )


#: Above this an outer IP packet is no jumbo frame: 9216 bytes, the usual jumbo MTU ceiling of data-centre
#: switches (NICs allow a little more: i40e 9702 = ``I40E_MAX_RXBUFFER`` 9728 less ``I40E_PACKET_HDR_PAD``).
JUMBO_MAX = 9216

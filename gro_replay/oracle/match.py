"""Which frames each skb the running kernel delivered carries (the kernel backend: validate.py ``kernel_result``,
``compare``).

The trace gives per delivered skb its device, ``skb->len`` and address (``net:netif_receive_skb``), and per skb
entering GRO its address (``net:napi_gro_receive_entry``): where the address names the first frame a delivery
carries (oracle/replay.py ``_Run._heads``), the delivery is that frame's flow's run from that frame, its length
deciding how many frames; where it does not, the match is inferred from lengths alone. GRO joins only
consecutive segments of one flow, each with TCP payload (tcp_gro_receive, net/ipv4/tcp_offload.c: a segment without
payload is flushed at once, ``(len - 1) >= mss``; a packet that is not TCP is never merged here), so a delivery of
``len`` L carries a run of one flow's pending frames: the first frame's L3 length plus the others' TCP payload
lengths equals L, and within a run every frame has payload. Runs of different flows can have equal lengths (a UDP
datagram of 252 bytes and two TCP segments of 152 + 100): the match is the assignment of every delivery, in order,
to such a run, found by a depth-first search that tries the flows oldest pending frame first at each delivery and
backs off when a later delivery fits no run (a state it backed off from is not searched again). Where no assignment matches every delivery (the search explores at
most ``_SEARCH_STEPS_PER_DELIVERY`` choices per delivery: time grows with the input, not beyond), each delivery
takes the oldest flow's run that fits, and a delivery no run fits is unmatched. Where addresses name no frame, the
match is inferred from lengths: two flows whose runs have equal lengths throughout can be told apart by no length.
Where they do, a flow's frames need not go up in send order (``_follow_heads``: a segment flushed at once goes up
before the earlier ones GRO holds). At the phys device a frame's length is its ``skb->len`` there, bytes past its
datagram included, and such a frame is never merged.
"""

from __future__ import annotations

from ..packet.headers import outer_udp, tcp_connection, tcp_payload_len

#: a queue of frames that GRO may merge: (flow id, the TCP connection of its innermost segment, None: not TCP)
Key = tuple[int, bytes | None]

#: the most choices the search makes per delivery before it takes the oldest-first match (``match_deliveries``)
_SEARCH_STEPS_PER_DELIVERY = 64


def frame_lengths(frame: bytes, l4: int, tunnel_ports: dict[int, str]) -> tuple[int, int, int]:
    """(outer L3 length, inner L3 length, inner TCP payload length) of a decoded frame, in bytes. The inner length is
    what follows the inner Ethernet header to the end of the outer UDP datagram by its length (``udp_rcv`` trims
    the skb to it) or of the outer IP datagram, the nearer, an inner VLAN tag included (the tunnel device's
    ``skb->len``: GRO and the trace see the tag, ``skb_vlan_untag`` pulls it later in
    ``__netif_receive_skb_core``).

    ``l4`` is the decoder's innermost L4 offset; inner values are 0 for frames that are not tunnelled. The payload
    is that of the innermost TCP segment, tunnelled or not (a plain TCP flow merges on the physical device too), 0
    for frames that carry none; it is ``packet.headers.tcp_payload_len``'s, by the lengths the IP headers declare
    (bytes past the datagrams are none), as the simulator reads it.
    """
    outer, inner_l3, end = _layout(frame, l4, tunnel_ports)
    return outer, (end - inner_l3 if inner_l3 else 0), tcp_payload_len(frame, tunnel_ports) or 0


def _layout(frame: bytes, l4: int, tunnel_ports: dict[int, str]) -> tuple[int, int, int]:
    """(outer L3 length, offset of the inner network header or 0 when not tunnelled, offset where the tunnel
    device's inner packet ends) of a decoded frame: ``frame_lengths``' reading of its outer headers."""
    e = frame[12] << 8 | frame[13]
    if e == 0x0800:
        outer = (frame[16] << 8) | frame[17]
    elif e == 0x86DD:
        outer = ((frame[18] << 8) | frame[19]) + 40
    else:
        return len(frame) - 14, 0, 0
    end = 14 + outer
    udp = outer_udp(frame)  # past the IPv6 extension headers ipv6_gro_receive walks
    if udp is None or udp + 16 > len(frame):
        return outer, 0, 0
    kind = tunnel_ports.get((frame[udp + 2] << 8) | frame[udp + 3])
    if kind is None or not l4:
        return outer, 0, 0
    # udp_rcv trims the datagram to its UDP length before decapsulation (pskb_trim_rcsum; a length beyond the IP
    # datagram or under 8 drops a frame that goes up alone, and udp_gro_complete rewrote an aggregate's)
    ulen = (frame[udp + 4] << 8) | frame[udp + 5]
    if 8 <= ulen < end - udp:
        end = udp + ulen
    tun = 8 if kind == "vxlan" else 8 + (frame[udp + 8] & 0x3F) * 4
    return outer, udp + 8 + tun + 14, end


def match_deliveries(
    lengths: list[int],
    frames: list[tuple],
    stage: str,
    tunnel_ports: dict[int, str],
    heads: list[int | None] | None = None,
) -> list[tuple[list[int], int]]:
    """Match delivered lengths (``skb->len``, bytes, in delivery order) to the frames they carry (module docstring);
    returns per delivery (frame indices: the frames' ``Frame.index``, flow id).

    ``frames`` are decoded frames (``sim.ingest.Frame``) in send order; ``stage`` picks outer (``"phys"``) or inner
    (``"tunnel"``) L3 lengths; ``tunnel_ports`` the decoder's (UDP port → ``"vxlan"``/``"geneve"``); ``heads``: per
    delivery the position in ``frames`` of the first frame it carries where its address tells, else None (a
    position, not a ``Frame.index``: the segments split from one captured frame share its index). Unmatched
    deliveries get ``([], -1)``. Never raises.
    """
    # (flow, TCP connection) → (position in frames, length, mergeable payload): GRO merges one connection's segments
    # only, and the report's flow of IP-in-IP or GRE traffic is keyed by addresses and protocol, so it can carry
    # several connections, whose frames interleave (fidelity34: its aggregates matched no run of the flow's frames)
    queues: dict[Key, list[tuple[int, int, int]]] = {}
    for at, f in enumerate(frames):
        outer, inner, payload = frame_lengths(f[1], f[6], tunnel_ports)
        inner_l3 = _layout(f[1], f[6], tunnel_ports)[1]
        # bytes past a datagram (a captured FCS, Ethernet padding) stop GRO merging it (inet_gro_receive: tot_len
        # ≠ the skb's length flushes it), as a segment without TCP payload does: past the inner one at both
        # devices, past the outer one at the phys device, whose skb->len counts them (the frame's after its
        # Ethernet header: ip_rcv and udp_rcv trim them before decapsulation)
        trailer = bool(inner) and _inner_trailer(f[1], inner_l3, inner)
        if stage == "phys":
            trailer = trailer or len(f[1]) > 14 + outer
        length = len(f[1]) - 14 if stage == "phys" else inner
        queues.setdefault((f[3], tcp_connection(f[1], tunnel_ports)), []).append(
            (at, length, 0 if trailer else payload)
        )
    if heads is not None and any(h is not None for h in heads):
        runs = _follow_heads(lengths, queues, heads)
    else:
        runs, pos = [], dict.fromkeys(queues, 0)
        for choice in _assign(lengths, queues):
            if choice is None:
                runs.append(([], None))
                continue
            fid, k = choice
            p = pos[fid]
            runs.append(([x[0] for x in queues[fid][p : p + k]], fid))
            pos[fid] = p + k
    # positions → Frame.index; (flow, connection) → flow
    return [([frames[at][7] for at in run], -1 if key is None else key[0]) for run, key in runs]


def _inner_trailer(frame: bytes, inner_l3: int, inner: int) -> bool:
    """Whether the inner packet starting at ``inner_l3`` (after the inner Ethernet header; ``inner`` bytes to the
    outer datagram's end) has bytes past the IP datagram it declares (inner VLAN tags skipped)."""
    at = inner_l3
    ethertype = (frame[at - 2] << 8) | frame[at - 1]
    while ethertype in (0x8100, 0x88A8) and at + 4 <= len(frame):
        ethertype = (frame[at + 2] << 8) | frame[at + 3]
        at += 4
    if ethertype == 0x0800 and at + 4 <= len(frame):
        declared = (frame[at + 2] << 8) | frame[at + 3]
    elif ethertype == 0x86DD and at + 6 <= len(frame):
        declared = ((frame[at + 4] << 8) | frame[at + 5]) + 40
    else:
        return False
    return inner_l3 + inner > at + declared


def _follow_heads(
    lengths: list[int], queues: dict[Key, list[tuple[int, int, int]]], heads: list[int | None]
) -> list[tuple[list[int], Key | None]]:
    """``match_deliveries`` where addresses name first frames: each delivery is the run from its first frame, the
    flow's frames after it not yet delivered added while its length is not reached. Frames of one flow need not
    go up in send order: a segment GRO flushes at once (a checksum that does not verify, a trailer) goes up before
    the earlier ones it holds. A delivery whose first frame is not named takes the run of the flow whose oldest
    frame not yet delivered starts one that fits, oldest first; one no run fits is unmatched."""
    where = {x[0]: (fid, p) for fid, q in queues.items() for p, x in enumerate(q)}
    taken = {fid: [False] * len(q) for fid, q in queues.items()}
    first = dict.fromkeys(queues, 0)  # each flow's oldest frame not yet delivered
    # the first frames the addresses name: each starts a delivery of its own, so no other delivery's run holds it
    # (a frame flushed ahead of one held before it, a retransmit then a frame with a trailer, made the run of the
    # earlier delivery take the later one's first frame: fidelity35)
    named = {fid: [False] * len(q) for fid, q in queues.items()}
    for h in heads:
        if h is not None and h in where:
            named[where[h][0]][where[h][1]] = True
    out: list[tuple[list[int], Key | None]] = []
    for length, head in zip(lengths, heads, strict=True):
        if head is not None:
            starts = [where[head]] if head in where and not taken[where[head][0]][where[head][1]] else []
        else:
            starts = sorted(
                ((fid, p) for fid, p in first.items() if p < len(queues[fid])),
                key=lambda s: queues[s[0]][s[1]][0],
            )
        got = None
        for fid, p in starts:
            run = _run_from(queues[fid], taken[fid], p, length, named[fid])
            if run is not None:
                got = fid, run
                break
        if got is None:
            out.append(([], None))
            continue
        fid, run = got
        for j in run:
            taken[fid][j] = True
        while first[fid] < len(queues[fid]) and taken[fid][first[fid]]:
            first[fid] += 1
        out.append(([queues[fid][j][0] for j in run], fid))
    return out


def _run_from(
    q: list[tuple[int, int, int]],
    taken: list[bool] | None,
    p: int,
    length: int,
    named: list[bool] | None = None,
) -> list[int] | None:
    """The positions in ``q`` of the run from ``p`` a delivery of ``length`` bytes carries (``p``'s length, then
    the payloads of the frames after it not yet delivered and not the first frame of another delivery (``named``),
    ``taken`` None: none, each with payload: a frame
    without TCP payload, or not TCP, is never merged and goes up alone), or None when none adds up to it."""
    total, run = q[p][1], [p]
    if q[p][2]:
        for j in range(p + 1, len(q)):
            if total >= length:
                break
            if (taken is not None and taken[j]) or (named is not None and named[j]):
                continue
            if not q[j][2]:
                break
            total += q[j][2]
            run.append(j)
    return run if total == length else None


def _runs(
    length: int, queues: dict[Key, list[tuple[int, int, int]]], pos: dict[Key, int]
) -> list[tuple[Key, int]]:
    """The runs of pending frames a delivery of ``length`` bytes can carry, as (flow, frames), the flow with the
    oldest pending frame (the first in ``frames``) first: per flow at most one, from its next pending frame
    (``_run_from``: payloads are above 0 within a run, so the sums grow)."""
    found = []
    for fid, q in queues.items():
        p = pos[fid]
        run = _run_from(q, None, p, length) if p < len(q) else None
        if run is not None:
            found.append((q[p][0], fid, len(run)))
    found.sort()
    return [(fid, k) for _, fid, k in found]


def _assign(
    lengths: list[int], queues: dict[Key, list[tuple[int, int, int]]]
) -> list[tuple[Key, int] | None]:
    """Per delivery the run it carries, (flow, frames) or None: an assignment matching every delivery where the
    bounded search finds one, else the oldest-first one with the deliveries no run fits unmatched. A state (the
    delivery reached, every flow's frames taken) from which no assignment completes is remembered, so that flows of
    equal frames, whose choices reach the same states in many orders, are searched once per state."""
    n = len(lengths)
    pos = dict.fromkeys(queues, 0)
    choice: list[tuple[Key, int] | None] = [None] * n
    options: list[list[tuple[Key, int]]] = []  # per delivery reached: the runs not tried yet, best first
    states: list[tuple[int, ...]] = []  # per delivery reached: the frames each flow had given (its state)
    dead: set[tuple[int, tuple[int, ...]]] = set()
    steps, budget = 0, _SEARCH_STEPS_PER_DELIVERY * n
    i = 0
    while 0 <= i < n and steps < budget:
        steps += 1
        if len(options) == i:
            states.append(tuple(pos.values()))  # O(flows), as _runs
            options.append([] if (i, states[i]) in dead else _runs(lengths[i], queues, pos))
        elif choice[i] is not None:  # back at i after every run of a later delivery failed: undo i's choice
            fid, k = choice[i]  # type: ignore[misc]
            pos[fid] -= k
            choice[i] = None
        if options[i]:
            fid, k = choice[i] = options[i].pop(0)
            pos[fid] += k
            i += 1
        else:
            dead.add((i, states.pop()))
            options.pop()
            i -= 1
    if i == n:
        return choice
    # no assignment matches every delivery (or the search ran out): oldest first, unmatched where none fits
    pos = dict.fromkeys(queues, 0)
    greedy: list[tuple[Key, int] | None] = []
    for length in lengths:
        runs = _runs(length, queues, pos)
        greedy.append(runs[0] if runs else None)
        if runs:
            pos[runs[0][0]] += runs[0][1]
    return greedy

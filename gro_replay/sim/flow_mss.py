"""What ``--resegment auto`` learns of each flow's MSS: its largest TCP payload and the MSS its peer announced in a
SYN; the MSS a super-frame of a flow is split by (``FlowMss.flow_mss_at``). A mixin of sim/ingest.py ``Ingest``.

Kernel: net/ipv4/tcp_input.c ``tcp_parse_options`` (the peer's MSS option into ``rx_opt.mss_clamp``),
net/ipv4/tcp_output.c ``__tcp_mtu_to_mss`` / ``tcp_mtu_to_mss`` (the sender clamps to it, floors at
TCP_MIN_SND_MSS, then subtracts its options).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..packet.headers import tcp_mss_option
from ..resegment import min_payload, mss_option_payload

if TYPE_CHECKING:
    from ..packet.decode import Decoder


class FlowMss:
    """The MSS learning of ``Ingest`` (its ``decoder``, ``flow_ended`` and the three tables set up there:
    ``_flow_mss``, ``_syn_mss``, ``_syn_mss_key``)."""

    decoder: Decoder
    #: per flow id, its largest TCP payload at or below the MTU (bytes); None unless --resegment auto
    _flow_mss: dict[int, int] | None
    #: the MSS option of each SYN seen and the flow that announced it, under the direction it limits: the peer's
    #: (``_peer_of``), whose sender clamps its segments to it
    _syn_mss: dict[tuple, tuple[int, int]]
    #: per announcing flow, its ``_syn_mss`` key, to forget it with the flow (sim/retiring.py)
    _syn_mss_key: dict[int, tuple]

    def flow_ended(self, fid: int, ts_ns: int) -> bool:
        """Whether flow ``fid`` had ended by the arrival of a frame of its key at ``ts_ns`` (ns), so that the frame
        starts a new flow. False here (flows never end); ``Replayer`` (sim/retiring.py) answers by the model's
        clock and the flow tracker's timeouts."""
        return False

    def _learn_mss(self, fid: int, frame: bytes, l4: int) -> None:
        """``--resegment auto``: keep the largest TCP payload (bytes) of tunnelled TCP flow ``fid``'s frames at or
        below the MTU, and the MSS option of its SYN (``frame``'s inner TCP header at ``l4``) for the peer's
        direction, whose segments it limits."""
        seen = self._flow_mss
        assert seen is not None  # auto mode keeps _flow_mss
        doff = (frame[l4 + 12] >> 4) << 2
        payload = len(frame) - l4 - doff
        if payload > seen.get(fid, 0):
            seen[fid] = payload
        if frame[l4 + 13] & 0x02 and doff > 20:  # SYN: the MSS option the sender announced
            opt = tcp_mss_option(frame, l4 + 20, min(l4 + doff, len(frame)))
            key = self._peer_of(fid, reverse=True)
            if opt and key is not None:
                self._syn_mss[key] = (opt, fid)
                self._syn_mss_key[fid] = key

    def _peer_of(self, fid: int, reverse: bool = False) -> tuple | None:
        """The inner TCP connection's direction of flow ``fid`` (``reverse``: the other direction), as a key
        ``_syn_mss`` shares between the two directions: tunnel, VNI, inner VLAN tags, inner addresses and ports (the
        outer headers of the two directions differ). None for a flow no longer known."""
        k = self.decoder.flows[fid] if fid < len(self.decoder.flows) else None
        if k is None:
            return None
        if reverse:
            return (k.tunnel, k.vni, k.inner_vlan, k.inner_dst, k.inner_src, k.inner_dport, k.inner_sport)
        return (k.tunnel, k.vni, k.inner_vlan, k.inner_src, k.inner_dst, k.inner_sport, k.inner_dport)

    def _mss_of_flow(self, probe: bytes, ts_ns: int) -> int | None:
        """``flow_mss_at`` for the flow of ``probe`` (a header-only frame of a super-frame that arrived at ``ts_ns``,
        ns), or None when ``probe`` does not decode."""
        r = self.decoder.decode(probe)
        if isinstance(r, str):
            return None
        frame, _vlan, fid, _rss, l4 = r
        return self.flow_mss_at(fid, ts_ns, ((frame[l4 + 12] >> 4) << 2) - 20 if l4 else 0)

    def flow_mss_at(self, fid: int, ts_ns: int, tcp_opt_len: int = 0) -> int | None:
        """The MSS (TCP payload bytes per segment) ``--resegment auto`` may use for a frame of flow ``fid`` arriving at
        ``ts_ns`` (ns) whose segments carry ``tcp_opt_len`` bytes of TCP options, or None (the split then takes what
        fits ``--mtu``): what was known of that flow at the frame's arrival — its largest TCP payload seen so far
        when at least a full segment's smallest (resegment.py ``min_payload``: 36 with timestamps, 48 without;
        smaller writes say nothing of the MSS), else the MSS option of the peer's SYN (or SYN-ACK) less the options
        (``mss_option_payload``: the option counts none; a sender clamps its segments to what the peer announced:
        net/ipv4/tcp_input.c ``tcp_parse_options`` into ``rx_opt.mss_clamp``, which net/ipv4/tcp_output.c
        ``__tcp_mtu_to_mss`` applies). A flow that had ended by then (``flow_ended``: silent past its timeout,
        retired or not yet) has learned nothing of its payloads: the frame starts a new flow; the peer's SYN counts
        while the peer's flow that sent it had not ended. The
        one rule on every path and poll model: it depends on capture time only, not on when the record is decoded
        relative to the polls that retire flows (the batch path decodes a block ahead of them, the gap and rx-usecs
        models a frame)."""
        assert self._flow_mss is not None  # used only in auto mode, which keeps _flow_mss
        seen = 0 if self.flow_ended(fid, ts_ns) else self._flow_mss.get(fid, 0)
        if seen >= min_payload(tcp_opt_len):
            return seen
        key = self._peer_of(fid)
        syn = self._syn_mss.get(key) if key is not None else None
        if syn is None or self.flow_ended(syn[1], ts_ns):  # the announcing flow had ended: nothing known
            return None
        return mss_option_payload(syn[0], tcp_opt_len)

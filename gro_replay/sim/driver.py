"""The NIC driver's RX step: the skb a driver builds for each frame of a poll (RX hash, VLAN tag, checksum state
``ip_summed`` / ``csum_level`` / ``csum``, and whether its head is a page fragment, ``head_frag``), the same for
every kernel model but the layout, which a driver changed between releases (kernel/nic_skb.py).

Kernel: a driver's RX completion (e.g. drivers/net/ethernet/mellanox/mlx5/core/en_rx.c ``mlx5e_build_rx_skb``:
``skb_set_hash``, ``__vlan_hwaccel_put_tag``, ``mlx5e_handle_csum``) before ``napi_gro_receive``. Also, an observation
and no kernel field: whether the frame's innermost TCP segment carries no payload (``SkBuff.no_payload``, read once
per frame by ``packet.headers.tcp_payload_len``, the kernel backend's reading too: validate.py). The per-preset
checksum decisions are in ``kernel/nic.py``, the skb layouts in ``kernel/nic_skb.py`` (a --nic preset's layout is
the driver's even when --rx-csum overrides its checksum state; without --nic, veth's skbs from AF_PACKET: linear
below 4080 bytes, paged from there).
"""

from __future__ import annotations

from ..kernel.kernel import Kernel
from ..kernel.model import KernelModel, release_tuple
from ..kernel.nic import NIC_PRESETS, RX_CSUM_PROFILES, hw_checksums_ok
from ..kernel.nic_skb import AF_PACKET_PAGED_FROM, VETH_AF_PACKET, packet_alloc_skb_layout
from ..kernel.skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY, SkBuff
from ..packet.csum import PollSums
from ..packet.decode import CLS_NOT_TUNNEL, Decoder
from ..packet.headers import tcp_payload_len
from .config import ReplayConfig
from .ingest import Frame


class DriverRx:
    """Builds one poll's skbs for each kernel (``poll_shared`` once per poll, then ``skbs`` per kernel)."""

    def __init__(self, config: ReplayConfig, decoder: Decoder) -> None:
        self.config = config
        self.decoder = decoder
        #: the driver preset deciding each frame's checksum state (rx_csum "nic"), else None
        self.preset = NIC_PRESETS[config.nic] if config.rx_csum == "nic" and config.nic is not None else None
        self._flow_state: list[tuple[int, int, str]] = []
        #: the skb layout of the driver (--nic), whether or not its checksum state decides; veth's without --nic
        self.layout = NIC_PRESETS[config.nic].rx_skb if config.nic is not None else VETH_AF_PACKET
        self.profile = RX_CSUM_PROFILES["none" if self.preset else config.rx_csum]
        prof = self.profile
        # (ip_summed, ip_summed of a PARTIAL-profile frame without an L4 header, csum_level) the driver sets
        self._rx_csum = (
            prof.ip_summed,
            CHECKSUM_NONE,
            0 if prof.ip_summed in (CHECKSUM_NONE, CHECKSUM_COMPLETE, CHECKSUM_PARTIAL) else prof.csum_level,
        )

    def skbs(self, k: Kernel, batch: list[Frame], shared: tuple) -> list[SkBuff]:
        """The skbs the driver builds for one poll's frames on kernel ``k``: RSS hash, VLAN tag, checksum state.

        ``shared``: ``poll_shared``'s per-poll values (CHECKSUM_COMPLETE sums, the poll's ``PollSums``, the frames
        without TCP payload, the frames AF_PACKET pages).
        """
        sums, ps, states, empty, paged = shared
        ip_summed, ip_summed_no_l4, csum_level = self._rx_csum
        complete = ip_summed == CHECKSUM_COMPLETE
        partial = ip_summed == CHECKSUM_PARTIAL
        phys = k.phys
        skbs: list[SkBuff] = []
        append = skbs.append
        for j, (ts_ns, frame, vlan, fid, h, l4_hash, l4, index) in enumerate(batch):
            if states is not None:  # the --nic preset's per-frame decision
                ip_summed, csum_level = states[j]
                complete = ip_summed == CHECKSUM_COMPLETE
            # SkBuff's arguments in order (positional: 40 % less than binding them by name, once per frame and
            # kernel): buf, mac_header, ts_ns, frame, flow, data (after eth_type_trans), protocol, dev, hash,
            # l4_hash, vlan_tci, ip_summed, csum_level, csum, csum_start, addr, psums, pidx, no_payload
            append(
                SkBuff(
                    frame,
                    0,
                    ts_ns,
                    index,
                    fid,
                    14,
                    (frame[12] << 8) | frame[13],
                    phys,
                    h,
                    l4_hash,
                    vlan,
                    ip_summed if l4 or not partial else ip_summed_no_l4,
                    csum_level,
                    sums[j] if complete else 0,
                    l4 if partial else 0,
                    0xFFFF888100000000 + (index << 8),
                    ps,
                    j,
                    empty[j],
                )
            )
        if self.layout.head_frag_from is not None and self.head_frag(k.model):
            for skb in skbs:
                skb.head_frag = True
        for j in paged:  # AF_PACKET's paged skbs (``_paged``)
            packet_alloc_skb_layout(skbs[j], k.model)
        return skbs

    def _paged(self, batch: list[Frame]) -> list[int]:
        """The index in ``batch`` of each frame whose skb AF_PACKET builds paged on veth (4,080 bytes or more:
        kernel/nic_skb.py ``packet_alloc_skb_layout``); [] for another driver. The length is the frame's without
        its VLAN tags, as the driver step has it (the tag is the skb's ``vlan_tci``) and as the kernel backend
        sends it."""
        if not self.layout.af_packet:
            return []
        return [j for j, f in enumerate(batch) if len(f.frame) >= AF_PACKET_PAGED_FROM]

    def head_frag(self, model: KernelModel) -> bool:
        """Whether the driver builds a full-sized frame's skb around its RX page (``skb->head_frag``) on a kernel of
        ``model`` (its upstream base release: ``RxSkbLayout.head_frag``)."""
        return self.layout.head_frag(release_tuple(model.base or model.release))

    def poll_shared(self, batch: list[Frame]) -> tuple:
        """What every kernel's skbs of one poll share: the CHECKSUM_COMPLETE values, the ``PollSums`` batch that
        serves software checksums (where bytes are summed, not a decision), with a --nic preset deciding, each
        frame's ``(ip_summed, csum_level)`` (``_nic_states``), else None, per frame whether its innermost TCP
        segment carries no payload (``packet.headers.tcp_payload_len`` 0: ``SkBuff.no_payload``), and the frames
        whose skbs AF_PACKET pages (``_paged``)."""
        states = self._nic_states(batch) if self.preset is not None else None
        if states is not None:
            complete = any(st[0] == CHECKSUM_COMPLETE for st in states)
        else:
            complete = self.profile.ip_summed == CHECKSUM_COMPLETE
        ps = PollSums([f.frame for f in batch])
        ports = self.decoder.tunnel_ports
        empty = [tcp_payload_len(f.frame, ports) == 0 for f in batch]
        return (ps.fill() if complete else None), ps, states, empty, self._paged(batch)

    def _nic_state_of_flow(self, fid: int) -> tuple[int, int, str]:
        """(ip_summed, csum_level, tunnel kind) the preset decides for flow ``fid``'s frames when their checksums
        verify: a function of the flow (outer family, outer UDP checksum zero or not, tunnelled or not)."""
        assert self.preset is not None  # called only when the preset decides
        st = self._flow_state
        flows = self.decoder.flows
        classes = self.decoder.flow_class
        while len(st) <= fid:
            key = flows[len(st)]
            # a flow is retired (key None) only after its frames went through here, so after its state was set
            assert key is not None
            tunnelled = classes[len(st)] != CLS_NOT_TUNNEL
            ip_summed, level = self.preset.rx_state(
                ":" in key.outer_src, key.outer_csum_zero, self.config.nic_tunnel_port, tunnelled
            )
            st.append((ip_summed, level, key.tunnel if tunnelled else ""))
        return st[fid]

    def _nic_states(self, batch: list[Frame]) -> list[tuple[int, int]]:
        """Per frame of one poll: the preset's state for its flow, CHECKSUM_NONE instead of UNNECESSARY when the
        preset reports bad checksums as NONE and a checksum the hardware checks does not verify
        (``nic.hw_checksums_ok``)."""
        assert self.preset is not None  # called only when the preset decides
        out = []
        check = self.preset.bad_csum_none
        for f in batch:
            ip_summed, level, tunnel = self._nic_state_of_flow(f.flow_id)
            if (
                check
                and ip_summed == CHECKSUM_UNNECESSARY
                and not hw_checksums_ok(f.frame, level, tunnel, f.l4_start)
            ):
                ip_summed, level = CHECKSUM_NONE, 0
            out.append((ip_summed, level))
        return out

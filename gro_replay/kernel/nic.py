"""The NIC's part: the RX checksum state a driver hands to GRO and the RX hash (RSS) that picks the bucket.

Kernel: drivers' RX checksum code as summarised in gro-spec §7 (ice ``ice_rx_csum``, i40e ``i40e_rx_checksum``,
mlx5 ``mlx5e_handle_csum``, virtio-net ``receive_buf``); ``skb_set_hash`` (include/linux/skbuff.h). The Toeplitz
function is Microsoft's RSS hash with the common 40-byte default key (also the default of many Linux drivers'
``netdev_rss_key`` users' documentation examples).
The ``--rx-csum`` profiles are one state for every frame. The ``--nic`` presets (``NIC_PRESETS``) follow one
driver's RX checksum function per frame: outer family, zero or computed outer UDP checksum, tunnel port offloaded
or not, and a bad checksum the hardware checked (``hw_checksums_ok``) reported as NONE; each names its source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..packet.csum import csum_add, csum_partial, pseudo_at
from ..packet.decode import ipv6_upper
from ..packet.headers import _tunnel_inner
from .model import SENDER_SWITCHES
from .nic_skb import RX_SKB_LAYOUTS, VETH_AF_PACKET, RxSkbLayout
from .skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY, IpSummed

#: Microsoft's RSS verification-suite key, the usual default RSS key.
DEFAULT_RSS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
)

from .names import DEFAULT_POLL_GAP_USECS, NIC_NAMES, RSS_MODES, RX_CSUM_NAMES  # noqa: E402, F401 (re-exported)


@dataclass(frozen=True, slots=True)
class RxCsumProfile:
    """How the driver marks received frames: ``ip_summed`` and ``csum_level``.

    ``none``: NONE (RXCSUM off, unknown ptype). ``unnecessary``: UNNECESSARY level 0 (ice/i40e without the tunnel
    port programmed, virtio-net DATA_VALID). ``unnecessary-tunnel``: level 1 (tunnel-aware parser).
    ``complete``: COMPLETE with the sum from the outer IP header to the end (mlx5). ``partial``: PARTIAL starting at
    the innermost TCP/UDP header (veth carrying locally generated frames). gro-spec §7.6.
    """

    name: str
    ip_summed: int
    csum_level: int = 0


RX_CSUM_PROFILES = {
    "none": RxCsumProfile("none", CHECKSUM_NONE),
    "unnecessary": RxCsumProfile("unnecessary", CHECKSUM_UNNECESSARY, 0),
    "unnecessary-tunnel": RxCsumProfile("unnecessary-tunnel", CHECKSUM_UNNECESSARY, 1),
    "complete": RxCsumProfile("complete", CHECKSUM_COMPLETE),
    "partial": RxCsumProfile("partial", CHECKSUM_PARTIAL),
}


def toeplitz_hash(key: bytes, data: bytes) -> int:
    """Toeplitz RSS hash of ``data`` under ``key`` (32-bit result).

    For each set bit of the input (MSB first), XOR in the 32-bit window of the key starting at that bit.
    Raises: ValueError when the key is shorter than ``len(data) + 4`` bytes.
    """
    if len(key) < len(data) + 4:
        raise ValueError(f"RSS key of {len(key)} bytes is too short for {len(data)} bytes of input")
    k = int.from_bytes(key, "big")
    kbits = len(key) * 8
    result = 0
    bit = 0
    for byte in data:
        for i in range(7, -1, -1):
            if byte >> i & 1:
                result ^= (k >> (kbits - 32 - bit)) & 0xFFFFFFFF
            bit += 1
    return result


# -- driver presets (--nic) ------------------------------------------------------------------------------------------

#: RSS input a preset hashes: outer addresses and UDP ports, outer addresses only, or no RX hash at all
RSS_FIELDS = ("4-tuple", "2-tuple", "none")


@dataclass(frozen=True, slots=True)
class NicPreset:
    """What one driver hands to GRO per frame, as its RX checksum function decides.

    ``decide(outer_v6, outer_csum_zero, tunnel_port, tunnelled)`` returns ``(ip_summed, csum_level)`` for a frame
    whose checksums are all correct: outer IPv6 or IPv4, outer UDP checksum 0 or computed, the tunnel UDP port
    offloaded to the NIC (``udp_tunnel_nic``: the parser knows the port) or not, and whether the frame is a
    VXLAN/Geneve frame at all. ``bad_csum_none``: a checksum the hardware checks and finds wrong makes the driver
    hand CHECKSUM_NONE (COMPLETE drivers hand the sum and let the stack find it). ``rss``: which outer fields the
    RX hash covers (RSS_FIELDS). ``rx_usecs``: the interrupt moderation default in µs (0: none) for the
    time-aware poll model; ``adaptive``: the driver adapts it (DIM/dynamic ITR) from there.
    ``source``: the driver function and file the decision follows; ``notes``: hardware behaviour the driver code
    cannot show (derived, marked [D]) and variants. ``rx_skb``: the skb layout the driver builds for a full-sized
    frame (``RxSkbLayout``), which decides whether ``skb_gro_receive`` chains segments on a frag_list.
    """

    name: str
    source: str
    decide: Callable[[bool, bool, bool, bool], tuple[IpSummed, int]]
    bad_csum_none: bool
    rss: str
    rx_usecs: int
    adaptive: bool
    tunnel_port_offload: bool
    notes: tuple[str, ...] = ()
    rx_skb: RxSkbLayout = VETH_AF_PACKET

    def rx_state(
        self, outer_v6: bool, outer_csum_zero: bool, tunnel_port: bool, tunnelled: bool = True
    ) -> tuple[IpSummed, int]:
        """``(ip_summed, csum_level)`` the driver sets for a frame with correct checksums (see the class doc)."""
        return self.decide(outer_v6, outer_csum_zero, tunnel_port and self.tunnel_port_offload, tunnelled)

    @property
    def poll(self) -> str | None:
        """The poll model (``--poll`` text) of this driver's default interrupt moderation, or None (no moderation:
        the default time-aware model stands). mlx5's default is CQE-based moderation — the period restarts at each
        completion, so a poll follows a pause (``gap``); the others time the interrupt from the first pending
        frame (EQE moderation / ITR: ``rx-usecs``). Adaptive moderation (DIM, dynamic ITR) is not modelled: the
        default value stands."""
        if not self.rx_usecs:
            return None
        return f"gap:{self.rx_usecs}" if self.name == "mlx5" else f"rx-usecs:{self.rx_usecs}"

    @property
    def rss_mode(self) -> str:
        """The ``--rss`` mode of this preset's RX hash fields (sim.RSS_MODES)."""
        return {"4-tuple": "toeplitz", "2-tuple": "toeplitz-l3", "none": "none"}[self.rss]

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "source": self.source,
            "bad_csum_none": self.bad_csum_none,
            "rss": self.rss,
            "rx_usecs": self.rx_usecs,
            "adaptive_moderation": self.adaptive,
            "poll": self.poll,
            "tunnel_port_offload": self.tunnel_port_offload,
            "rx_skb": self.rx_skb.as_dict(),
        }


U0 = (CHECKSUM_UNNECESSARY, 0)
U1 = (CHECKSUM_UNNECESSARY, 1)
NONE = (CHECKSUM_NONE, 0)
COMPLETE = (CHECKSUM_COMPLETE, 0)


def _intel_ptype(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # ice_rx_csum / i40e_rx_checksum: UNNECESSARY when the innermost L4 is TCP/UDP/SCTP and no error bit is set;
    # csum_level 1 when the packet type is a tunnel (>= IP-GRE/NAT class), which the parser only produces for a
    # UDP port programmed into it. Otherwise the frame is plain IP/UDP: level 0. The outer UDP checksum value
    # does not enter the decision (EUDPE is an error bit, not a "checksum absent" bit).
    return U1 if tunnelled and port else U0


def _ixgbe(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # ixgbe_rx_checksum: a VXLAN packet type (X550 with the port programmed) with OUTERIPCS → level 1; otherwise a
    # UDP frame is plain UDP. 82599 errata (__IXGBE_RX_CSUM_UDP_ZERO_ERR, set for ixgbe_mac_82599EB): a UDP frame
    # with a zero checksum may be flagged TCPE and the driver returns with CHECKSUM_NONE.
    if tunnelled and port:
        return U1
    return NONE if zero and tunnelled else U0


def _mlx5(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # mlx5e_handle_csum: an IPv4/IPv6 frame (not SCTP, no XDP, not the short-frame case) gets CHECKSUM_COMPLETE
    # with the CQE checksum; the tunnel (CQE "tunneled" bit, level 1) only matters in the UNNECESSARY branch.
    return COMPLETE


def _bnxt(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # bnxt_rx_pkt: UNNECESSARY when RX_CMP_L4_CS_OK (L4_CS_CALC or T_L4_CS_CALC set, no error bit), csum_level =
    # RX_CMP_ENCAP = the T_L4_CS_CALC bit (the tunnel's outer UDP checksum was calculated). [D] A zero outer
    # checksum is not calculated: with the port offloaded the inner L4 check alone makes it UNNECESSARY level 0;
    # without it the outer UDP is the only L4 and nothing was calculated: CHECKSUM_NONE.
    if tunnelled and port:
        return U0 if zero else U1
    return NONE if zero and tunnelled else U0


def _virtio(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # receive_buf / virtio_net_hdr_to_skb: VIRTIO_NET_HDR_F_DATA_VALID → CHECKSUM_UNNECESSARY, no csum_level
    # (level 0); the host sets DATA_VALID for frames its own stack or NIC validated. No tunnel port offload.
    return U0


def _vmxnet3(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # vmxnet3_rx_csum: v4 with CSUM_OK (or v6 with TUC) → UNNECESSARY; csum_level 1 when the descriptor's
    # HDR_INNER bit says the device parsed the inner headers (tunnel offload, dacce2be3312; the level since the
    # 2022-12 fix "vmxnet3: correctly report csum_level for encapsulated packet").
    return U1 if tunnelled and port else U0


def _ena(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # ena_rx_checksum: TCP/UDP without l4_csum_err and with l4_csum_checked → UNNECESSARY (level 0), else NONE.
    # ENA parses the outer headers only. [D] A zero UDP checksum is nothing to check: l4_csum_checked clear → NONE.
    return NONE if zero and tunnelled else U0


def _gve(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # gve GQI receive (gve_rx.c): "NIC passes up the partial sum": a non-zero desc->csum → CHECKSUM_COMPLETE.
    return COMPLETE


def _veth(v6: bool, zero: bool, port: bool, tunnelled: bool) -> tuple[IpSummed, int]:
    # veth_xmit → __dev_forward_skb: ip_summed is the sender's (ce8c839b74e3 "veth: don't modify ip_summed");
    # a frame written into the peer by a packet socket or a replay is CHECKSUM_NONE.
    return NONE


#: --nic presets. rx_usecs: ice ICE_DFLT_RX_ITR (ICE_ITR_20K = 50 µs, dynamic), i40e I40E_ITR_RX_DEF (I40E_ITR_20K,
#: dynamic), ixgbe IXGBE_20K_ITR (register value 200 = 50 µs << 2; rx_itr_setting 1 = dynamic), mlx5
#: MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC_FROM_CQE (3 µs, CQE-based moderation, DIM on), bnxt
#: bnxt_init_dflt_coal (rx coal_ticks 10 µs), ena ENA_INTR_INITIAL_RX_INTERVAL_USECS (0, adaptive), gve GQI and
#: virtio-net none, vmxnet3 none in the driver (the hypervisor coalesces), veth none (NAPI scheduled by the peer's
#: xmit).
NIC_PRESETS: dict[str, NicPreset] = {
    p.name: p
    for p in (
        NicPreset(
            "ice",
            "ice_rx_csum, drivers/net/ethernet/intel/ice/ice_txrx_lib.c (gro-spec §7.1)",
            _intel_ptype,
            True,
            "4-tuple",
            50,
            True,
            True,
            rx_skb=RX_SKB_LAYOUTS["ice"],
        ),
        NicPreset(
            "i40e",
            "i40e_rx_checksum, drivers/net/ethernet/intel/i40e/i40e_txrx.c (gro-spec §7.2)",
            _intel_ptype,
            True,
            "4-tuple",
            50,
            True,
            True,
            rx_skb=RX_SKB_LAYOUTS["i40e"],
        ),
        NicPreset(
            "ixgbe",
            "ixgbe_rx_checksum, drivers/net/ethernet/intel/ixgbe/ixgbe_main.c",
            _ixgbe,
            True,
            "2-tuple",
            50,
            True,
            True,
            (
                "port off models the 82599 (UDP zero-checksum errata), port on the X550 VXLAN parser",
                "UDP RSS hashes addresses only unless ethtool -N rx-flow-hash udp4 sdfn",
            ),
            rx_skb=RX_SKB_LAYOUTS["ixgbe"],
        ),
        NicPreset(
            "mlx5",
            "mlx5e_handle_csum, drivers/net/ethernet/mellanox/mlx5/core/en_rx.c (gro-spec §7.3)",
            _mlx5,
            False,
            "4-tuple",
            3,
            True,
            True,
            ("the tunnel port only matters with CHECKSUM_COMPLETE off (priv flag rx_no_csum_complete, XDP)",),
            rx_skb=RX_SKB_LAYOUTS["mlx5"],
        ),
        NicPreset(
            "bnxt",
            "bnxt_rx_pkt and RX_CMP_ENCAP, drivers/net/ethernet/broadcom/bnxt/bnxt.c, bnxt.h",
            _bnxt,
            True,
            "4-tuple",
            10,
            False,
            True,
            ("[D] a zero outer UDP checksum is taken as not calculated (no T_L4_CS_CALC / L4_CS_CALC bit)",),
            rx_skb=RX_SKB_LAYOUTS["bnxt"],
        ),
        NicPreset(
            "virtio-net",
            "receive_buf (VIRTIO_NET_HDR_F_DATA_VALID), drivers/net/virtio_net.c (gro-spec §7.4)",
            _virtio,
            True,
            "none",
            0,
            False,
            False,
            ("no RX hash without VIRTIO_NET_F_HASH_REPORT; a bad checksum: the host sets no DATA_VALID",),
            rx_skb=RX_SKB_LAYOUTS["virtio-net"],
        ),
        NicPreset(
            "vmxnet3",
            "vmxnet3_rx_csum, drivers/net/vmxnet3/vmxnet3_drv.c",
            _vmxnet3,
            True,
            "2-tuple",
            0,
            False,
            True,
            (
                "port on: the device's tunnel offload parsed the inner headers (HDR_INNER); drivers before "
                "dacce2be3312 (v5.8?) have no tunnel offload and drivers before the 2022-12 csum_level fix hand "
                "level 0 even then",
                "UDP RSS hashes addresses only unless enabled on the host",
            ),
            rx_skb=RX_SKB_LAYOUTS["vmxnet3"],
        ),
        NicPreset(
            "ena",
            "ena_rx_checksum, drivers/net/ethernet/amazon/ena/ena_netdev.c",
            _ena,
            True,
            "4-tuple",
            0,
            True,
            False,
            ("[D] l4_csum_checked is taken as clear for a zero UDP checksum",),
            rx_skb=RX_SKB_LAYOUTS["ena"],
        ),
        NicPreset(
            "gve",
            "gve GQI receive (desc->csum → CHECKSUM_COMPLETE), drivers/net/ethernet/google/gve/gve_rx.c",
            _gve,
            False,
            "4-tuple",
            0,
            False,
            False,
            (
                "the DQO queue format (gve_rx_skb_csum, gve_rx_dqo.c) hands UNNECESSARY level 0: --rx-csum unnecessary",
            ),
            rx_skb=RX_SKB_LAYOUTS["gve"],
        ),
        NicPreset(
            "veth",
            "veth_xmit / __dev_forward_skb, drivers/net/veth.c (ip_summed kept from the sender)",
            _veth,
            False,
            "none",
            0,
            False,
            False,
            (
                "give the peer's state with --rx-csum (e.g. unnecessary when the peer forwarded a NIC's frame)",
            ),
            rx_skb=RX_SKB_LAYOUTS["veth"],
        ),
    )
}


def nic_preset(name: str) -> NicPreset:
    """The preset for ``--nic NAME``. Raises: KeyError naming the known presets."""
    try:
        return NIC_PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown --nic {name!r}; choose from {', '.join(NIC_PRESETS)}") from None


def _l4_ok(frame: bytes, ip: int, v6: bool, l4: int, proto: int) -> bool:
    """True when the TCP/UDP checksum of the L4 segment at ``l4`` (IP header at ``ip``) verifies."""
    if v6:
        length = (frame[ip + 4] << 8 | frame[ip + 5]) + 40 - (l4 - ip)
        pseudo = pseudo_at(frame, ip + 8, 32, length, proto)
    else:
        length = (frame[ip + 2] << 8 | frame[ip + 3]) - (l4 - ip)
        pseudo = pseudo_at(frame, ip + 12, 8, length, proto)
    if length <= 0 or l4 + length > len(frame):
        return False
    return csum_add(pseudo, csum_partial(frame, l4, l4 + length)) == 0xFFFF


def _l4_after(frame: bytes, ip: int, ethertype: int) -> tuple[bool, int, int] | None:
    """``(IPv6, L4 protocol, L4 offset)`` of the IP header at ``frame[ip]`` (IPv4: past its options; IPv6: past its
    extension headers, packet/decode.py ``ipv6_upper``), or None: not IP, or an extension header cut short."""
    if ethertype == 0x0800 and ip + 20 <= len(frame):
        return False, frame[ip + 9], ip + ((frame[ip] & 0x0F) << 2)
    if ethertype == 0x86DD and ip + 40 <= len(frame):
        upper = ipv6_upper(frame, ip, len(frame))
        return None if upper is None else (True, *upper)
    return None


def hw_checksums_ok(frame: bytes, level: int, tunnel: str, l4: int) -> bool:
    """Whether the checksums a NIC checks before handing UNNECESSARY at ``level`` verify: a TCP segment's that is
    not tunnelled (breaker42: a bad one was merged), or that IP in IP, SIT or GRE carries (Intel's IP_IP and
    GRENAT packet types reach it: breaker43); the outer UDP checksum when it is not 0; and at level 1 also the
    inner TCP/UDP checksum of a ``tunnel`` frame (``vxlan``/``geneve``): the decoder's innermost L4 at ``l4``, or
    the inner header's own UDP (a tunnel inside the tunnel, UDP traffic), when its checksum is not 0. The packet
    inside a tunnel is found as GRO reaches it (packet/headers.py ``_tunnel_inner``), IPv6 extension headers
    stepped over (breaker42: a hop-by-hop header read as a bad checksum). Frames are untagged Ethernet (the
    decoder took VLAN tags off)."""
    outer = _l4_after(frame, 14, frame[12] << 8 | frame[13])
    if outer is None:
        return True
    v6, proto, at = outer
    if proto == 6:
        return _l4_ok(frame, 14, v6, at, 6)
    ports: dict[int, str] = {}
    if proto == 17:
        if at + 8 > len(frame):
            return True
        if (frame[at + 6] or frame[at + 7]) and not _l4_ok(frame, 14, v6, at, 17):
            return False
        if level < 1 or not tunnel or not l4:
            return True
        ports = {frame[at + 2] << 8 | frame[at + 3]: tunnel}
    inner = _tunnel_inner(frame, proto, at, ports)
    if inner is None:
        return True
    ethertype, l3 = inner
    found = _l4_after(frame, l3, ethertype)
    if found is None:
        return True
    v6, iproto, first = found
    if proto != 17:  # IP in IP, SIT, GRE: the inner TCP only
        if iproto != 6:
            return True
        l4 = first
    elif iproto == 17:
        # inner UDP (a tunnel inside the tunnel, or UDP traffic): level 1 is the inner header's own UDP, whose
        # checksum 0 has nothing to check (it read as bad: breaker34), not an L4 further in, whose pseudo-header
        # would be another IP header's
        if first + 8 > len(frame) or not (frame[first + 6] or frame[first + 7]):
            return True
        l4 = first
    return _l4_ok(frame, l3, v6, l4, iproto)


if tuple(RX_CSUM_PROFILES) != RX_CSUM_NAMES or tuple(NIC_PRESETS) != NIC_NAMES:  # pragma: no cover
    raise ImportError("kernel/names.py lists other --rx-csum / --nic names than kernel/nic.py builds")


def unread_switches(nic: str | None) -> frozenset[str]:
    """The kernel model switches a replay with ``--nic nic`` (None: without) never reads: those of the veth
    model's AF_PACKET sender (``model.SENDER_SWITCHES``) when the preset's driver builds its own skbs
    (kernel/nic_skb.py ``RxSkbLayout.af_packet`` False). Two kernels differing only in them are one model there."""
    if nic is None or NIC_PRESETS[nic].rx_skb.af_packet:
        return frozenset()
    return SENDER_SWITCHES

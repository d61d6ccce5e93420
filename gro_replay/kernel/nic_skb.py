"""The skb layout a driver's RX path builds, as far as ``skb_gro_receive`` reads it (``head_frag``, page fragments).

Kernel: the drivers' RX skb construction (``ice_build_skb``, ``i40e_build_skb``, ``ixgbe_build_skb``,
``mlx5e_build_linear_skb``, ``bnxt_rx_skb``; ``build_skb``/``napi_build_skb`` in net/core/skbuff.c set
``head_frag`` when given a fragment size) and veth carrying AF_PACKET's skbs (``packet_snd`` →
``packet_alloc_skb``, ``veth_xmit``): linear below 4080 bytes, paged from there (``packet_alloc_skb_frags``). Which
layout decides only where ``skb_gro_receive`` (kernel/gro.py) puts a merged segment's payload: into the last skb's
page frags while ``MAX_SKB_FRAGS`` allows, or on the frag_list, which makes ``dev_gro_receive`` flush the aggregate
when it enters GRO again on the tunnel device (v6.1+, 5eddb24901ee).
Left out: header-split layouts (a copied header plus page frags: legacy-rx, virtio-net mergeable buffers, gve
GQI), copybreak copies of short frames, XDP multi-buffer, hardware GRO; presets whose driver builds those are
built with a linear head, and their ``notes`` say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import KernelModel
    from .skbuff import SkBuff

PAGE_SIZE = 4096  #: bytes; x86-64, arm64 with 4 KiB pages
#: include/linux/mmzone.h: the highest page order the allocator treats as cheap
PAGE_ALLOC_COSTLY_ORDER = 3
ETH_HLEN = 14  #: veth's ``dev->hard_header_len``: the linear part ``packet_snd`` asks for
#: ``packet_snd``'s ``prepad``: ``LL_RESERVED_SPACE(dev)`` (hard_header_len 14 + needed_headroom 0, rounded down to
#: HH_DATA_MOD 16, plus 16) + ``needed_tailroom`` 0, for a veth without XDP or a bridge raising its headroom
VETH_PREPAD = 16
#: the shortest frame (bytes on the wire) ``packet_alloc_skb`` builds paged on veth: ``prepad + len >= PAGE_SIZE``
AF_PACKET_PAGED_FROM = PAGE_SIZE - VETH_PREPAD


def packet_alloc_skb_frags(wire_len: int, model: KernelModel) -> int:
    """The page fragments (``skb_shinfo(skb)->nr_frags``) of the skb AF_PACKET builds for a ``wire_len``-byte frame
    sent on veth on a kernel of ``model``; 0: a linear skb. ``wire_len``: the bytes sent (the kernel backend sends
    a frame without its VLAN tags, which the model gives the skb as ``vlan_tci``).

    Kernel: net/packet/af_packet.c ``packet_snd`` (no virtio-net header: ``linear`` = ``dev->hard_header_len``)
    → ``packet_alloc_skb``: a frame with ``prepad + len < PAGE_SIZE`` (VETH_PREPAD: under 4080 bytes) is all
    linear; a longer one keeps 14 bytes linear and puts ``len - 14`` bytes (``skb->data_len``) in page frags
    (``sock_alloc_send_pskb`` → net/core/skbuff.c ``alloc_skb_with_frags``): order-0 pages before ae6db08f8b56
    with 09c2c90705bb (v6.6, ``KernelModel.packet_alloc_skb_costly_order``); from them, each frag the largest
    order up to 3 whose size the page-aligned rest reaches, the order never growing again (a frame of 9014 bytes:
    8192 + 808 bytes, 2 frags; 3 before). The higher orders are ``__GFP_NORETRY``: on a fragmented machine the
    kernel may fall back to smaller pages and more frags, which is not modelled. veth keeps the skb as it is
    (``veth_xmit`` → ``veth_forward_skb``; no XDP program), so its NAPI GRO sees it so.
    """
    if wire_len < AF_PACKET_PAGED_FROM:
        return 0
    data_len = wire_len - ETH_HLEN
    if not model.packet_alloc_skb_costly_order:
        return -(-data_len // PAGE_SIZE)
    order, frags = PAGE_ALLOC_COSTLY_ORDER, 0
    while data_len > 0:
        while order and -(-data_len // PAGE_SIZE) * PAGE_SIZE < PAGE_SIZE << order:
            order -= 1
        data_len -= PAGE_SIZE << order
        frags += 1
    return frags


def packet_alloc_skb_layout(skb: SkBuff, model: KernelModel) -> None:
    """Lay ``skb`` out as AF_PACKET's skb of its frame (``buf``, VLAN tags removed) on veth, ``eth_type_trans``
    done: from 4,080 bytes ``data_len`` all but the 14-byte Ethernet header (``skb_headlen`` 0) and ``nr_frags``
    from ``packet_alloc_skb_frags``; a shorter frame's skb stays linear."""
    nr_frags = packet_alloc_skb_frags(skb.tail, model)
    if nr_frags:
        skb.nr_frags = nr_frags
        skb.data_len = skb.tail - ETH_HLEN


@dataclass(frozen=True, slots=True)
class RxSkbLayout:
    """How a driver's default RX path lays out the skb of a full-sized frame (1500-byte MTU, no XDP program, a
    frame longer than the driver's copybreak), as far as ``skb_gro_receive`` reads it (kernel/gro.py).

    ``head_frag_from``: the first upstream release ``(major, minor)`` whose default path builds that skb around
    the RX page buffer (``build_skb``/``napi_build_skb`` with a fragment size: ``skb->head_frag = 1``, the whole
    frame in the head, no page fragments); (4, 19) when the driver did so before every profile; None when the model
    builds no such skb for this driver. A kernel older than it, or None, gets a kmalloc'd linear head
    (``head_frag = 0``, no page fragments), as veth's from AF_PACKET below 4080 bytes, which the kernel backend
    measures. ``af_packet``: frames are AF_PACKET's as veth carries them (the kernel backend, the default without
    ``--nic``): from 4080 bytes on, paged (``packet_alloc_skb_frags``).
    ``source``: the driver functions and commits; ``notes``: what the driver builds that the model does not
    (header split, copybreak copies, older releases), each saying how it is built here instead.
    """

    head_frag_from: tuple[int, int] | None
    source: str
    notes: tuple[str, ...] = ()
    af_packet: bool = False

    def head_frag(self, release: tuple[int, int]) -> bool:
        """Whether a kernel of upstream ``release`` builds the full-sized frame's skb with ``head_frag`` set."""
        return self.head_frag_from is not None and release >= self.head_frag_from

    def as_dict(self) -> dict:
        return {
            "head_frag_from": (None if self.head_frag_from is None else "{}.{}".format(*self.head_frag_from)),
            "source": self.source,
            "notes": list(self.notes),
            "af_packet": self.af_packet,
        }


#: veth carrying a frame written by AF_PACKET (packet_snd → packet_alloc_skb; veth_xmit → veth_forward_skb keeps
#: the skb), what the kernel backend measures: a kmalloc'd linear head below 4080 bytes, a 14-byte head and page
#: frags from there (``packet_alloc_skb_frags``)
VETH_AF_PACKET = RxSkbLayout(
    None,
    "packet_snd → packet_alloc_skb (net/packet/af_packet.c) → veth_xmit: the sender's skb, linear below 4,080 bytes",
    af_packet=True,
)


#: The layout of each --nic preset (kernel/nic.py ``NIC_PRESETS``), named after it.
RX_SKB_LAYOUTS: dict[str, RxSkbLayout] = {
    "ice": RxSkbLayout(
        (5, 5),
        "ice_build_skb (napi_build_skb around the RX page), ice_txrx.c; ice_setup_rx_ctx enables it unless the "
        "legacy-rx private flag is set ('ice: add build_skb() support' with 7237f5b0dba4, net-next 2019-10: "
        "v5.5 [D])",
        (
            "before v5.5, and with legacy-rx: ice_construct_skb copies eth_get_headlen bytes into a "
            "napi_alloc_skb(ICE_RX_HDR_SIZE 256) head and adds the rest as a page frag: built linear here",
        ),
    ),
    "i40e": RxSkbLayout(
        (4, 19),
        "i40e_build_skb (build_skb around the RX page), i40e_txrx.c: i40e_clean_rx_irq's default "
        "(ring_uses_build_skb) unless the legacy-rx private flag is set; [D] in the driver before v4.19",
        ("legacy-rx: i40e_construct_skb (header copy + page frag): built linear here",),
    ),
    "ixgbe": RxSkbLayout(
        (4, 19),
        "ixgbe_build_skb (build_skb around the RX page), ixgbe_main.c: ixgbe_set_rx_buffer_len enables it "
        "unless IXGBE_FLAG2_RX_LEGACY (legacy-rx); [D] in the driver before v4.19",
        ("legacy-rx: ixgbe_construct_skb (header copy + page frag): built linear here",),
    ),
    "mlx5": RxSkbLayout(
        (4, 19),
        "mlx5e_skb_from_cqe_mpwrq_linear (striding RQ, the default from ConnectX-5) and "
        "mlx5e_skb_from_cqe_linear (legacy RQ) → mlx5e_build_linear_skb (napi_build_skb), en_rx.c: linear "
        "when frame, headroom and skb_shared_info fit a stride, as a 1500-byte MTU does "
        "(mlx5e_rx_mpwqe_is_linear_skb); striding RQ linear since 619a8f2a42f1 (2018, before v4.19 [D])",
        (
            "non-linear RQs (large MTU, XDP multi-buffer): mlx5e_skb_from_cqe_mpwrq_nonlinear copies up to "
            "MLX5E_RX_MAX_HEAD (256) bytes into a napi_alloc_skb head plus page frags: not built",
        ),
    ),
    "bnxt": RxSkbLayout(
        (5, 17),
        "bnxt_rx_pkt → bnxt_rx_skb (build_skb with the buffer size) on page-frag RX buffers from 720908e5f816 "
        "'bnxt_en: Use page frag RX buffers for better software GRO performance' (net-next 2021-12: v5.17 "
        "[D]); before it kmalloc'd buffers and build_skb(data, 0): head_frag 0, segments on the frag_list",
        (
            "frames of at most rx_copy_thresh (256) bytes are copied into a napi_alloc_skb head "
            "(bnxt_copy_skb): built as full-sized frames here",
            "hardware GRO (NETIF_F_GRO_HW, TPA) is not modelled",
        ),
    ),
    "virtio-net": RxSkbLayout(
        None,
        "receive_mergeable → page_to_skb, drivers/net/virtio_net.c (VIRTIO_NET_F_MRG_RXBUF)",
        (
            "[D] page_to_skb copies a frame longer than GOOD_COPY_LEN (128) only up to its Ethernet header "
            "into a napi_alloc_skb head and adds the rest as a page frag (build_skb needs tailroom, "
            "fb32856b16ad, that buffers sized by the average packet length lack): a header split whose "
            "merges move frags; not built: built linear here",
        ),
    ),
    "vmxnet3": RxSkbLayout(
        None,
        "vmxnet3_rq_rx_complete, drivers/net/vmxnet3/vmxnet3_drv.c",
        (
            "[D] the first buffer is an skb preallocated by netdev_alloc_skb_ip_align (a page-frag head for a "
            "1500-byte MTU), not confirmed across releases (XDP rework, v6.6): built linear here",
        ),
    ),
    "ena": RxSkbLayout(
        None,
        "ena_rx_skb, drivers/net/ethernet/amazon/ena/ena_netdev.c",
        (
            "frames above rx_copybreak (256) are built around the RX page (napi_build_skb) in recent "
            "drivers, earlier as a small head plus page frags; the release that changed it was not read: "
            "built linear here",
        ),
    ),
    "gve": RxSkbLayout(
        None,
        "gve_rx (GQI), drivers/net/ethernet/google/gve/gve_rx.c",
        (
            "GQI hands page frags to napi_gro_frags (napi_get_frags, headers pulled from frag0): a header "
            "split whose merges move frags; frames up to rx_copybreak (256) are copied; built linear here",
        ),
    ),
    "veth": VETH_AF_PACKET,
}

"""The NIC's part: the RX checksum state a driver hands to GRO and the RX hash (RSS) that picks the bucket.

Kernel: drivers' RX checksum code as summarised in gro-spec §7 (ice ``ice_rx_csum``, i40e ``i40e_rx_checksum``,
mlx5 ``mlx5e_handle_csum``, virtio-net ``receive_buf``); ``skb_set_hash`` (include/linux/skbuff.h). The Toeplitz
function is Microsoft's RSS hash with the common 40-byte default key (also the default of many Linux drivers'
``netdev_rss_key`` users' documentation examples).
Left out: per-descriptor error bits (a NIC that saw a bad checksum reports NONE: use ``none`` for such captures).
"""

from __future__ import annotations

from dataclasses import dataclass

from .skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY

#: Microsoft's RSS verification-suite key, the usual default RSS key.
DEFAULT_RSS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
)


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

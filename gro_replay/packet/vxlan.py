"""VXLAN header (RFC 7348) as a small ``dpkt.Packet``, for building frames in ``synth`` and tests.

Field names follow the kernel's ``struct vxlanhdr``: ``vx_flags`` (the I flag is 0x08000000) and ``vx_vni``
(VNI << 8 | reserved). The payload (``data``) is the inner Ethernet frame, kept as bytes.

Kernel: include/net/vxlan.h ``struct vxlanhdr``, ``VXLAN_HF_VNI``, ``vxlan_vni_field``.

The Group Based Policy extension (draft-smith-vxlan-group-policy; include/net/vxlan.h ``struct vxlanhdr_gbp``):
``gbp_flags`` builds the first header word with the G flag, the D (don't learn) and A (policy applied) bits and the
16-bit policy ID.

Left out: the GPE and remote-checksum-offload flag layouts (their bits can still be set by hand in ``vx_flags``),
and decoding the inner frame: the replay path reads headers in place, not through dpkt.
"""

from __future__ import annotations

import dpkt

#: The "I" flag: the VNI field is valid (RFC 7348 §5). Kernel: ``VXLAN_HF_VNI`` (as a host-order value).
VXLAN_HF_VNI = 0x08000000
#: GBP bits of the first header word as host-order values (include/net/vxlan.h ``VXLAN_HF_GBP``; the D and A bits
#: sit where ``VXLAN_GBP_DONT_LEARN`` / ``VXLAN_GBP_POLICY_APPLIED`` put them in ``struct vxlan_metadata``).
VXLAN_HF_GBP = 0x80000000
VXLAN_GBP_DONT_LEARN = 1 << 22
VXLAN_GBP_POLICY_APPLIED = 1 << 19
#: IANA-assigned VXLAN UDP port. Kernel: ``IANA_VXLAN_UDP_PORT``.
IANA_VXLAN_UDP_PORT = 4789


class VxlanHdr(dpkt.Packet):
    """VXLAN header: 8 bytes, then the inner Ethernet frame as ``data``.

    Fields: ``vx_flags`` (32 bits), ``vx_vni`` (32 bits: VNI << 8 | reserved); ``vni`` reads and writes
    the 24-bit VNI inside ``vx_vni``.
    """

    __hdr__ = (
        ("vx_flags", "I", VXLAN_HF_VNI),
        ("vx_vni", "I", 0),
    )
    # the fields dpkt makes from __hdr__, declared for the type checker
    vx_flags: int
    vx_vni: int

    @property
    def vni(self) -> int:
        """The 24-bit VXLAN network identifier. Kernel: ``vxlan_vni(vx_vni)``."""
        return self.vx_vni >> 8

    @vni.setter
    def vni(self, value: int) -> None:
        if not 0 <= value < 1 << 24:
            raise ValueError(f"VNI {value} does not fit in 24 bits")
        self.vx_vni = (value << 8) | (self.vx_vni & 0xFF)


def gbp_flags(
    policy_id: int, *, dont_learn: bool = False, policy_applied: bool = False, g: bool = True
) -> int:
    """The first VXLAN-GBP header word: I flag, G flag (unless ``g`` is False), D and A bits, 16-bit policy ID.

    Raises: ValueError when ``policy_id`` does not fit in 16 bits. Kernel: include/net/vxlan.h ``struct vxlanhdr_gbp``
    (``dont_learn`` is bit 6 and ``policy_applied`` bit 3 of the second byte; ``policy_id`` big-endian after it).
    """
    if not 0 <= policy_id < 1 << 16:
        raise ValueError(f"GBP policy ID {policy_id} does not fit in 16 bits")
    return (
        VXLAN_HF_VNI
        | (VXLAN_HF_GBP if g else 0)
        | (VXLAN_GBP_DONT_LEARN if dont_learn else 0)
        | (VXLAN_GBP_POLICY_APPLIED if policy_applied else 0)
        | policy_id
    )


#: The kernel's struct name, for code read side by side with include/net/vxlan.h.
vxlanhdr = VxlanHdr

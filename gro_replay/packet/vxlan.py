"""VXLAN header (RFC 7348) as a small ``dpkt.Packet``, for building frames in ``synth`` and tests.

Field names follow the kernel's ``struct vxlanhdr``: ``vx_flags`` (the I flag is 0x08000000) and ``vx_vni``
(VNI << 8 | reserved). The payload (``data``) is the inner Ethernet frame, kept as bytes.

Kernel: include/net/vxlan.h ``struct vxlanhdr``, ``VXLAN_HF_VNI``, ``vxlan_vni_field``.

Left out: the GBP, GPE and remote-checksum-offload flag layouts (their bits can still be set by hand in
``vx_flags``), and decoding the inner frame: the replay path reads headers in place, not through dpkt.
"""

from __future__ import annotations

import dpkt

#: The "I" flag: the VNI field is valid (RFC 7348 §5). Kernel: ``VXLAN_HF_VNI`` (as a host-order value).
VXLAN_HF_VNI = 0x08000000
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

    @property
    def vni(self) -> int:
        """The 24-bit VXLAN network identifier. Kernel: ``vxlan_vni(vx_vni)``."""
        return self.vx_vni >> 8

    @vni.setter
    def vni(self, value: int) -> None:
        if not 0 <= value < 1 << 24:
            raise ValueError(f"VNI {value} does not fit in 24 bits")
        self.vx_vni = (value << 8) | (self.vx_vni & 0xFF)


#: The kernel's struct name, for code read side by side with include/net/vxlan.h.
vxlanhdr = VxlanHdr

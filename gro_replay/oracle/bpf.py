"""Two hand-assembled eBPF programs, loaded and attached with the bpf(2) syscall through ctypes.

- ``csum_level_prog(n)``: a ``SCHED_CLS`` program for tcx egress on the sender veth that calls
  ``bpf_csum_level(skb, BPF_CSUM_LEVEL_INC)`` ``n`` times and returns ``TCX_NEXT``. The first call turns
  ``CHECKSUM_NONE`` into ``CHECKSUM_UNNECESSARY`` level 0, each further call raises the level by one; the
  receiving veth then sees the skb as a NIC that validated ``n`` checksums would hand it over.
- ``xdp_pass_prog()``: an ``XDP`` program returning ``XDP_PASS``, attached in generic (skb) mode so that
  ``netif_elide_gro()`` skips GRO on the receiving veth and the vxlan gro_cells aggregate instead.

Kernel: net/core/filter.c (bpf_csum_level), include/linux/skbuff.h (__skb_incr_checksum_unnecessary),
kernel/bpf/tcx.c (tcx_link_attach, >= 6.6), net/core/dev.c (bpf_xdp_link_attach, netif_elide_gro).

Left out: BTF, maps, libbpf's object format; links are created by fd in the caller's network namespace
(the caller enters it first, see ``netns.in_netns``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

BPF_PROG_LOAD = 5
BPF_LINK_CREATE = 28

BPF_PROG_TYPE_SCHED_CLS = 3
BPF_PROG_TYPE_XDP = 6

BPF_XDP = 37
BPF_TCX_EGRESS = 47

XDP_FLAGS_SKB_MODE = 1 << 1

BPF_FUNC_csum_level = 135
BPF_CSUM_LEVEL_INC = 1
TCX_NEXT = -1
XDP_PASS = 2

_SYS_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "ppc64le": 361, "s390x": 351}

_INSN = struct.Struct("<BBhi")
_ATTR_SIZE = 128


class BpfError(OSError):
    """The bpf(2) syscall failed; ``errno`` is set, ``log`` holds the verifier's log if one was asked for."""

    errno: int  # always given (OSError's may be None)

    def __init__(self, err: int, what: str, log: str = "") -> None:
        super().__init__(err, f"{what}: {os.strerror(err)}" + (f" ({log.strip()})" if log.strip() else ""))
        self.log = log


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return _INSN.pack(code, (src << 4) | dst, off, imm)


def _mov64_reg(dst: int, src: int) -> bytes:
    return _insn(0xBF, dst, src)  # BPF_ALU64 | BPF_MOV | BPF_X


def _mov64_imm(dst: int, imm: int) -> bytes:
    return _insn(0xB7, dst, imm=imm)  # BPF_ALU64 | BPF_MOV | BPF_K


def _call(helper: int) -> bytes:
    return _insn(0x85, imm=helper)  # BPF_JMP | BPF_CALL


def _exit() -> bytes:
    return _insn(0x95)  # BPF_JMP | BPF_EXIT


def csum_level_prog(n_inc: int) -> bytes:
    """Bytecode: ``bpf_csum_level(skb, BPF_CSUM_LEVEL_INC)`` ``n_inc`` times, then ``return TCX_NEXT``."""
    code = [_mov64_reg(6, 1)]  # r6 = skb: r1..r5 are clobbered by each call
    for _ in range(n_inc):
        code += [_mov64_reg(1, 6), _mov64_imm(2, BPF_CSUM_LEVEL_INC), _call(BPF_FUNC_csum_level)]
    code += [_mov64_imm(0, TCX_NEXT), _exit()]
    return b"".join(code)


def xdp_pass_prog() -> bytes:
    """Bytecode: ``return XDP_PASS``."""
    return _mov64_imm(0, XDP_PASS) + _exit()


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _sys_bpf(cmd: int, attr: ctypes.Array) -> int:
    nr = _SYS_BPF.get(platform.machine())
    if nr is None:
        raise BpfError(errno.ENOSYS, f"bpf(2) syscall number unknown for {platform.machine()}")
    ret = _libc.syscall(ctypes.c_long(nr), ctypes.c_int(cmd), attr, ctypes.c_uint(len(attr)))
    if ret < 0:
        err = ctypes.get_errno()
        raise BpfError(err, f"bpf cmd {cmd}")
    return ret


def prog_load(prog_type: int, insns: bytes, *, expected_attach_type: int = 0, name: str = "") -> int:
    """Load a program; returns its fd (the caller closes it).

    Raises: BpfError, with the verifier log when the verifier refused the program.
    """
    insn_buf = ctypes.create_string_buffer(insns, len(insns))
    license_buf = ctypes.create_string_buffer(b"GPL")
    log_buf = ctypes.create_string_buffer(1 << 16)
    for log_level in (0, 1):  # ask for the verifier log only after a refusal
        attr = ctypes.create_string_buffer(_ATTR_SIZE)
        struct.pack_into(
            "<IIQQIIQII16sII",
            attr,
            0,
            prog_type,
            len(insns) // _INSN.size,
            ctypes.addressof(insn_buf),
            ctypes.addressof(license_buf),
            log_level,
            len(log_buf) if log_level else 0,
            ctypes.addressof(log_buf) if log_level else 0,
            0,
            0,
            name.encode()[:15],
            0,
            expected_attach_type,
        )
        try:
            return _sys_bpf(BPF_PROG_LOAD, attr)
        except BpfError as e:
            if log_level or e.errno not in (errno.EINVAL, errno.EACCES):
                raise BpfError(e.errno, "BPF_PROG_LOAD", log_buf.value.decode(errors="replace")) from None
    raise AssertionError("unreachable")


def link_create(prog_fd: int, ifindex: int, attach_type: int, flags: int = 0) -> int:
    """Attach ``prog_fd`` to the device ``ifindex`` of the caller's network namespace; returns the link fd.

    The attachment lives as long as the link fd (and the device). Raises: BpfError.
    """
    attr = ctypes.create_string_buffer(_ATTR_SIZE)
    struct.pack_into("<IIII", attr, 0, prog_fd, ifindex, attach_type, flags)
    try:
        return _sys_bpf(BPF_LINK_CREATE, attr)
    except BpfError as e:
        raise BpfError(e.errno, f"BPF_LINK_CREATE (attach type {attach_type})") from None


def probe() -> None:
    """Load and drop the XDP pass program: proves the bpf syscall works here. Raises: BpfError."""
    os.close(
        prog_load(BPF_PROG_TYPE_XDP, xdp_pass_prog(), expected_attach_type=BPF_XDP, name="groreplay_probe")
    )

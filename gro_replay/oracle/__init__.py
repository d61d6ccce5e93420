"""Kernel backend: replay frames through the running Linux kernel in private network namespaces and
record what each GRO stage delivered (ground truth for the simulator's post-fix model).

Recipe: the module docstring of gro_replay/oracle/replay.py. Needs root, network namespaces, tracefs, veth, vxlan and bpf(2);
``check_environment`` names the first missing one.
"""

from gro_replay.oracle.env import (
    OracleError,
    OracleUnavailable,
    check_environment,
    kernel_hz,
    kernel_release,
    kernel_vlan_offload,
)
from gro_replay.oracle.replay import KernelDelivery, OracleResult, remove_leftovers, run_kernel
from gro_replay.oracle.tracefs import trace_instances

__all__ = [
    "KernelDelivery",
    "OracleError",
    "OracleResult",
    "OracleUnavailable",
    "check_environment",
    "kernel_hz",
    "kernel_release",
    "kernel_vlan_offload",
    "remove_leftovers",
    "run_kernel",
    "trace_instances",
]

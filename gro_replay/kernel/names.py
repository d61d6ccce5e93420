"""Names the command line offers before anything heavy is imported (start-up time, bench/startup.py).

kernel/nic.py builds its tables under exactly these names and checks so when imported; the defaults live here for
the same reason.
"""

from __future__ import annotations

#: ``--rx-csum``: the keys of ``kernel.nic.RX_CSUM_PROFILES``
RX_CSUM_NAMES = ("none", "unnecessary", "unnecessary-tunnel", "complete", "partial")
#: ``--nic``: the keys of ``kernel.nic.NIC_PRESETS``
NIC_NAMES = ("ice", "i40e", "ixgbe", "mlx5", "bnxt", "virtio-net", "vmxnet3", "ena", "gve", "veth")
#: The kernel backend's geneve device's UDP port (oracle/replay.py: made whenever the capture holds Geneve; the
#: kernel command has no --geneve-port): IANA's Geneve port, include/net/geneve.h ``GENEVE_UDP_PORT``
BACKEND_GENEVE_PORT = 6081
#: --rss: Toeplitz over outer addresses + UDP/TCP ports, over outer addresses only, or no RX hash (hash 0)
RSS_MODES = ("toeplitz", "toeplitz-l3", "none")

#: The default poll model's moderation period, µs (``--poll gap:3``): mlx5's CQE-based RX interrupt moderation.
#: ``mlx5e_build_nic_params`` (drivers/net/ethernet/mellanox/mlx5/core/en_main.c) picks
#: ``MLX5_CQ_PERIOD_MODE_START_FROM_CQE`` on every device with ``cq_period_start_from_cqe`` (ConnectX-4 on), and
#: ``mlx5e_get_def_rx_moderation`` then sets the period to ``MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC_FROM_CQE``
#: (en.h: 0x3). In that mode the period timer restarts at every completion (9908aa292971 "net/mlx5e: CQE based
#: moderation"): the interrupt, and the NAPI poll, comes once the traffic pauses for 3 µs — the ``gap`` model.
#: Not modelled: the 32-completion counter (``..._RX_CQ_MODERATION_PKTS``; a poll takes up to the NAPI weight)
#: and net_dim's adaptive changes. Other drivers differ (EQE-based mlx5 ``rx-usecs`` 16 from the first
#: completion: ``--poll rx-usecs:16``; ice/i40e ``ICE_ITR_20K``/``I40E_ITR_20K``: 50 µs). One named value so
#: that a NIC preset can replace it.
DEFAULT_POLL_GAP_USECS = 3

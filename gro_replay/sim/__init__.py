"""The simulation pipeline around the kernel models: capture records → frames → polls → driver RX → kernels.

Modules, in pipeline order:
``config.py``   ``ReplayConfig``, ``PollModel``, ``ConfigError``, option parsers (``parse_gro``, ``parse_resegment``)
``ingest.py``   records → decoded ``Frame``s: ``InputStats``, tunnel-port detection, filters, resegmenting
``notes.py``    the input notes (tunnel ports, how the capture was taken)
``polls.py``    which frames share a poll (``iter_polls``, ``PollSchedule``) and the RX queues (``RxQueue``)
``driver.py``   the NIC driver's RX step: each frame's skb (RX hash, VLAN tag, checksum state)
``replayer.py`` ``Replayer`` (one run over every kernel model) and its ``Result``
``flows.py``    flow retirement (``FlowTracker``: ended or silent flows leave the tables)
``api.py``      the one-shot API: ``replay_capture``, ``replay_frames``

The batch path (``pollcache.py``) runs the same ``Replayer`` block by block. Every public name of the modules is
re-exported here: ``from gro_replay.sim import X`` is the stable spelling.
"""

from ..packet.headers import tcp_mss_option
from .api import replay_capture, replay_frames
from .config import (
    GRO_DEVICES,
    RSS_INDIR_TABLE_SIZE,
    ConfigError,
    PollModel,
    ReplayConfig,
    parse_gro,
    parse_resegment,
)
from .driver import DriverRx
from .ingest import (
    Frame,
    Ingest,
    InputStats,
    TunnelScanError,
    detect_tunnel_ports,
)
from .notes import capture_notes, input_notes, tunnel_notes
from .polls import (
    PollSchedule,
    RxQueue,
    add_rx_queues,
    enter_rx_queue,
    ethtool_rxfh_indir_default,
    iter_polls,
)
from .replayer import Replayer, Result
from .size_notes import JUMBO_MAX

__all__ = [
    "GRO_DEVICES",
    "JUMBO_MAX",
    "RSS_INDIR_TABLE_SIZE",
    "ConfigError",
    "DriverRx",
    "Frame",
    "Ingest",
    "InputStats",
    "PollModel",
    "PollSchedule",
    "ReplayConfig",
    "Replayer",
    "Result",
    "RxQueue",
    "TunnelScanError",
    "add_rx_queues",
    "capture_notes",
    "input_notes",
    "detect_tunnel_ports",
    "enter_rx_queue",
    "ethtool_rxfh_indir_default",
    "iter_polls",
    "parse_gro",
    "parse_resegment",
    "replay_capture",
    "replay_frames",
    "tcp_mss_option",
    "tunnel_notes",
]

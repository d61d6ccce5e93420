"""gro-replay: replay VXLAN/Geneve captures through a simulation of Linux NAPI GRO, before and after 89e5c58fc1e2."""

__version__ = "0.1.0"

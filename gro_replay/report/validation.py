"""``gro-replay validate``'s results as one computation: its SUMMARY line and its JSON document (schema
``validate``), both from the per-device agreements (validate.py ``compare``), so the two cannot disagree."""

from __future__ import annotations

from ..project import __version__
from .stats import SCHEMA_VERSION


def validation_summary(devices) -> str:
    """``SUMMARY validate agrees=yes|no phys=a/b tunnel=a/b``: per device the skbs that agree (the matching
    prefix of the delivered lengths) of the skbs either backend delivered, ``devices`` the agreements
    (``validate.DeviceAgreement``, phys first); with several tunnel devices ``tunnel@PORT=a/b`` each."""
    ok = all(d.agrees for d in devices)
    return f"SUMMARY validate agrees={'yes' if ok else 'no'} " + " ".join(
        f"{d.stage}{f'@{d.port}' if d.port and len(devices) > 2 else ''}={d.matching}/{d.total}"
        for d in devices
    )


def validation_document(release: str, model, oracle, devices, sim_cfg, inp: dict) -> dict:
    """The JSON document of ``gro-replay validate`` (report/schema/validate.json): the running kernel
    (``release``, ``oracle.hz``), the simulator profile it is compared with (``model``: a ``KernelModel``), the
    frames sent and not, where GRO ran (``sim_cfg.gro_runs()``), whether every device agrees, per device
    ``DeviceAgreement.as_dict`` (lengths in bytes of ``skb->len``; frame numbers from 1), the input (``inp``:
    ``InputStats.as_dict`` counted over the frames sent, validate.py ``account_sent``) and the SUMMARY line."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gro-replay", "version": __version__},
        "kind": "validate",
        "input": inp,
        "kernel_release": release,
        "hz": oracle.hz,
        "simulator_profile": model.release,
        "rx_csum": sim_cfg.rx_csum,
        "frames_sent": oracle.frames_sent,
        "frames_not_replayable": oracle.frames_not_replayable,
        "gro": sim_cfg.gro_runs(),  # as the kernel report's config.gro: where GRO ran
        "agrees": all(d.agrees for d in devices),
        "devices": [d.as_dict() for d in devices],
        "summary": validation_summary(devices),
    }

"""A count of one reads in the singular wherever a report line counts frames or skbs (project.py ``plural``, the one
definition that capture notes, the verdict, the kernel backend and the CLI share): "1 frame sent", never "1 frames
sent" (the kernel backend's first line said so, session 22's note)."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import needs_kernel_backend

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.project import plural
from gro_replay.report.verdict.words import payload_clause


def test_plural():
    assert [plural(n, "frame") for n in (0, 1, 2)] == ["frames", "frame", "frames"]
    assert plural(2, "capture", "captures taken") == "captures taken"


def test_payload_clause_counts_one_skb_in_the_singular():
    assert payload_clause(1, 1, "its") == " (its one skb carries no payload)"
    assert payload_clause(3, 1) == " (1 of their 3 skbs carries no payload)"
    assert payload_clause(3, 2) == " (2 of their 3 skbs carry no payload)"
    assert payload_clause(2, 2) == " (all 2 of their skbs carry no payload)"
    assert payload_clause(2, 0) == ""


def _one_frame(tmp_path) -> str:
    # one VXLAN frame of 1000 payload bytes: below every MTU, no resegmenting, one frame read and replayed
    path = tmp_path / "one.pcap"
    with PcapWriter(str(path)) as w:
        w.write(1_000_000_000, build_flow(FrameSpec(), [1000])[0])
    return str(path)


def _run(args: list[str]):
    r = CliRunner().invoke(main, args, prog_name="gro-replay")
    assert r.exit_code == 0, r.output
    return r


def test_write_pcap_says_one_frame(tmp_path):
    # the one frame's skb as the phys device delivered it, then decapsulated as the vxlan device did: 2 frames;
    # with its port not a tunnel port (--vxlan-port 1) the phys device alone delivers it: 1 frame
    path = _one_frame(tmp_path)
    r = _run([path, "--write-pcap", str(tmp_path / "out"), "--kernel", "6.18"])
    assert r.stderr.splitlines()[-1].endswith(" (2 frames)")
    r = _run([path, "--write-pcap", str(tmp_path / "o1"), "--kernel", "6.18", "--vxlan-port", "1"])
    assert r.stderr.splitlines()[-1].endswith(" (1 frame)")


@needs_kernel_backend
def test_kernel_backend_and_validate_say_one_frame_sent(tmp_path):
    path = _one_frame(tmp_path)
    head = _run(["kernel", path]).stdout.splitlines()[0]
    assert ", 1 frame sent;" in head, head
    head = _run(["validate", path]).stdout.splitlines()[0]
    assert "; 1 frame, --rx-csum none" in head, head

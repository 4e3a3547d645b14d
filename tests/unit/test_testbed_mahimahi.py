"""Reading mm-link's log into counters and statistics; the command in mahimahi's shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from cganalysis.testbed.dataplane.mmlog import LinkCounters, read_more
from cganalysis.testbed.netns.mahimahi import INNER, LINK_READY, READY, link_inner, trace_start_ns
from cganalysis.testbed.rendering.mahimahi import MahimahiLink

HEADER = """# mahimahi mm-link (Downlink) [/x/mm-down.trace] > /x/mm-downlink.log
# command line: 'mm-link' ...
# queue: droptail [packets=2]
# init timestamp: 1000000
# base timestamp: 7
"""


def test_log_counters_are_ip_bytes_and_records_follow_the_interval(tmp_path: Path) -> None:
    log = tmp_path / "mm-downlink.log"
    # Three arrivals of 1504 bytes (1500 IP + the TUN header), one dropped; one delivered
    # at 12 ms after 5 ms in the link, one at 130 ms; the last line is still being written.
    log.write_text(
        HEADER + "7 + 1504\n7 + 1504\n8 + 1504\n8 d 1 1504\n12 # 1504\n12 - 1504 5\n"
        "130 # 1504\n130 - 1504 122\n131 # 15"
    )
    c = LinkCounters()
    read_more(log, c, 100.0)
    rec = c.as_record()
    assert (rec["sent_packets"], rec["sent_bytes"], rec["dropped"]) == (2, 3000, 1)
    assert rec["backlog_packets"] == 0 and rec["backlog_bytes"] == 0
    assert rec["opportunities"] == 2  # the half-written line waits for the next read
    # One record at the 100 ms boundary, before the 130 ms events: one sent, one queued.
    assert [r["t_ns"] for r in c.records] == [(1_000_000 + 100) * 1_000_000]
    assert (c.records[0]["sent_packets"], c.records[0]["backlog_packets"]) == (1, 1)
    with log.open("a") as f:
        f.write("04\n")
    read_more(log, c, 100.0)
    assert c.as_record()["opportunities"] == 3
    # The trace's time 0: init + base, in the middle of that millisecond.
    assert trace_start_ns(log) == (1_000_000 + 7) * 1_000_000 + 500_000


def test_the_shell_command_waits_for_forwarding_before_mm_delay() -> None:
    link = MahimahiLink(None, 12.0, None, 1000.0, ("droptail", "packets=100"), ("infinite", ""), 0)
    assert link_inner(link) == INNER
    delayed = link_inner(MahimahiLink(**{**link.__dict__, "delay_ms": 15}))
    assert delayed[:2] == ["sh", "-c"] and delayed[2].startswith(f'echo "{LINK_READY} $$"')
    script = delayed[2]
    assert script.index("ip_forward") < script.index("exec mm-delay 15 sh -c")
    assert READY in script


def test_the_trace_folder_is_the_link_users_alone(tmp_path: Path) -> None:
    """mm-link's copies of the traces (a lab's own measurements, possibly) are readable by
    the user it runs as and root only: not left world-readable in a temporary folder."""
    import os
    import pwd
    import shutil
    import stat

    from cganalysis.testbed.netns.mahimahi import prepare_folder

    if os.geteuid() != 0:
        pytest.skip("handing the folder to another user needs root")
    trace = tmp_path / "lab.down"
    trace.write_text("1\n2\n", encoding="utf-8")
    link = MahimahiLink(str(trace), None, None, 1000.0, ("infinite", ""), ("infinite", ""), 0)
    folder, paths = prepare_folder(link, "nobody")
    try:
        nobody = pwd.getpwnam("nobody").pw_uid
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert folder.stat().st_uid == nobody
        for path in paths:
            mode = stat.S_IMODE(Path(path).stat().st_mode)
            assert mode & 0o077 == 0, f"{path}: mode {mode:o}"
            assert Path(path).stat().st_uid == nobody
    finally:
        shutil.rmtree(folder)

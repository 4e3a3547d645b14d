"""Ericsson's SCReAM test programs as a CG source (``cg.source: scream-reference``).

``scream_bw_test_tx`` / ``scream_bw_test_rx`` (github.com/EricssonResearch/scream, BSD-2,
the code eCGP embeds) are built by the user (docs/cg.md) and found through
``$CGA_SCREAM_TX_BIN`` / ``$CGA_SCREAM_RX_BIN`` or the ``PATH``; nothing of theirs is in
the project. This module builds their command lines, describes the binaries for
``meta.json`` and reads the sender's ``-log`` file into columns named as ``cga-cg``'s
controller log, so that both controllers' internals compare side by side.

Their sender binds the destination port on its own host too (its RTP source port is the
receiver's port), and their receiver listens on the port it is given and answers the
sender's address; their RFC 8888 reports count ``num_reports`` as blocks - 1.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.binaries import find_program
from cganalysis.errors import CganalysisError
from cganalysis.io import sha256_file

TX_NAME = "scream_bw_test_tx"
RX_NAME = "scream_bw_test_rx"
TX_ENV = "CGA_SCREAM_TX_BIN"
RX_ENV = "CGA_SCREAM_RX_BIN"
#: The sender's log file name in the run directory.
LOG_NAME = "cg-reference-tx.log"
#: cga-cg's encoder limits, used when the run file gives none: both sources then see the
#: same limits (Ericsson's own defaults are 1 and 500 Mbit/s).
DEFAULT_MIN_MBPS = 0.5
DEFAULT_MAX_MBPS = 30.0
#: Beyond this many seconds an unpatched build's ``maxPolicedCwnd`` overflows (docs/cg.md).
OVERFLOW_AFTER_S = 90.0
#: The newest program version without ``maxPolicedCwnd`` (aca6556's V2 sender, 2023-09-20:
#: neither of its controllers has the variable, so nothing of it can overflow).
NO_POLICED_CWND_UNTIL = "2023-09-18"

#: Columns of the sender's ``-log`` lines (ScreamV2Tx.cpp's per-feedback fprintf), named
#: after cga-cg's controller log where they mean the same thing; None: not kept.
LOG_COLUMNS: tuple[str | None, ...] = (
    "t_s",
    "qdelay_s",
    "rtt_sample_s",
    "ref_wnd_bytes",  # cwnd
    "bytes_in_flight",
    None,  # fast increase mode (always 0 in V2)
    "transmit_bps",  # all streams
    None,  # stream id
    "rtp_seq",
    "bytes_acked",
    "bytes_acked_ce",
    "media_bps",  # the encoder's measured rate (rateRtpAvg)
    "stream_transmit_bps",
    "acked_bps",
    "lost_bps",
    "ce_bps",
    None,  # marker bit
    "target_bps",
    "rtp_queue_delay_s",
    "ref_wnd_i_bytes",  # cwndI
)
#: The 2023 programs' log (aca6556, V1 or V2 alike): the first 17 of these columns; the
#: target bitrate, RTP queue delay and cwndI came later.
LOG_WIDTH_2023 = 17
#: Nine more columns that an instrumented build appends (log only): the state that
#: cga-cg logs as well. Their presence also tells the overflow-capped build apart, since
#: the instrumentation and the cap were made together (docs/cg.md).
EXTENDED_COLUMNS: tuple[str, ...] = (
    "l4s_alpha",
    "qdelay_avg_s",
    "l4s_alpha_v",
    "window_headroom",
    "latency_diff_cwnd_scale",
    "qdelay_min_slow_avg_s",
    "srtt_s",
    "fraction_marked",
    "pace_bps",
)


#: The first line their sender prints when run without arguments; it names the controller
#: class the build runs. aca6556's scream_sender.cpp builds ScreamV1Tx unless V2 is defined
#: (its line 22, ``//#define V2``), while eCGP's proxy, TMA 2024's sender, runs ScreamV2Tx
#: of the same commit; from 2024 the program has V2 only.
_BANNER = re.compile(
    r"SCReAM (V[12]) BW test tool, sender\. Ericsson AB\. Version (\d{4}-\d{2}-\d{2})"
)
#: ``cg.reference_controller`` values: the controller class the run needs.
CONTROLLERS = ("v1", "v2")
#: How to build the V2 sender of aca6556, for errors.
V2_BUILD_HINT = "rebuild with `cmake -DCMAKE_CXX_FLAGS=-DV2` (docs/cg.md)"


@dataclass(frozen=True)
class Banner:
    """What the sender says it is: ``controller`` ``v1`` / ``v2`` and its version date."""

    controller: str
    version: str


def parse_banner(text: str) -> Banner | None:
    """The banner in a sender's usage text; None when none is there (another program, or
    a build whose text differs). Only the matched words are kept: the text is the
    program's, not ours."""
    found = _BANNER.search(text[:4096])
    if found is None:
        return None
    return Banner(found.group(1).lower(), found.group(2))


def probe_banner(tx: Path) -> Banner | None:
    """Runs the sender without arguments (it prints its usage and exits)."""
    try:
        done = subprocess.run(
            [str(tx)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_banner(done.stderr + done.stdout)


def controller_refusal(want: str, banner: Banner | None, tx: str) -> str | None:
    """Why ``tx`` cannot run a run that asks for ``cg.reference_controller: want``; None
    when it can."""
    if banner is None:
        return (
            f"cg.reference_controller {want}: {tx} does not say which SCReAM it runs (no "
            "'SCReAM Vn BW test tool' line when run without arguments)"
        )
    if banner.controller == want:
        return None
    hint = V2_BUILD_HINT if want == "v2" else "point CGA_SCREAM_TX_BIN at a V1 build"
    return (
        f"cg.reference_controller {want}: {tx} runs SCReAM {banner.controller.upper()} "
        f"(version {banner.version}); {hint}"
    )


class ReferenceNotFoundError(CganalysisError):
    """Ericsson's SCReAM programs are not built or not found."""


class ReferenceLogError(CganalysisError):
    """The reference sender's log cannot be read."""


@dataclass(frozen=True)
class Reference:
    tx: Path
    rx: Path

    def describe(self) -> dict[str, Any]:
        """For meta.json: which build ran (paths, checksums, the controller it says it
        runs: ``v1`` / ``v2`` / ``unknown``)."""
        banner = probe_banner(self.tx)
        return {
            "tx_path": str(self.tx),
            "rx_path": str(self.rx),
            "tx_sha256": sha256_file(self.tx),
            "rx_sha256": sha256_file(self.rx),
            "controller": "unknown" if banner is None else banner.controller,
            "program_version": "unknown" if banner is None else banner.version,
        }


def find_reference() -> Reference:
    hint = (
        "build Ericsson's SCReAM (docs/cg.md, 'Ericsson's SCReAM as a CG source') and put "
        f"{TX_NAME} / {RX_NAME} on the PATH or name them in ${TX_ENV} / ${RX_ENV}"
    )
    try:
        tx = find_program(TX_NAME, TX_ENV, ReferenceNotFoundError)
        rx = find_program(RX_NAME, RX_ENV, ReferenceNotFoundError)
    except ReferenceNotFoundError as err:
        raise ReferenceNotFoundError(f"cg.source scream-reference: {err}; {hint}") from None
    return Reference(tx, rx)


def ect_option(ecn: str) -> str:
    """``-ect`` value of the run's ECN codepoint (their -1 is not-ECT)."""
    return {"ect1": "1", "ect0": "0", "none": "-1"}[ecn]


def sender_argv(
    tx: Path | str,
    *,
    dest_ip: str,
    port: int,
    ecn: str,
    start_mbps: float,
    min_mbps: float | None,
    max_mbps: float | None,
    fps: float,
    duration_s: float,
    log_path: str,
    extra: Sequence[str] = (),
) -> list[str]:
    """``scream_bw_test_tx`` for one run: rates in kbit/s, NTP (epoch) times in its log so
    that it lines up with the captures."""

    def kbps(mbps: float) -> str:
        return f"{mbps * 1000:.0f}"

    # Not-ECT is their default (-1), and aca6556's parser refuses `-ect -1` (its check
    # reads `ect == 1 || ect == 0 || ect == 1 || ect == 3`, scream_sender.cpp:862, and
    # exits without sending): the option is given only for an ECN codepoint.
    ect = [] if ecn == "none" else ["-ect", ect_option(ecn)]
    return [
        str(tx),
        *ect,
        "-initrate",
        kbps(start_mbps),
        "-minrate",
        kbps(DEFAULT_MIN_MBPS if min_mbps is None else min_mbps),
        "-maxrate",
        kbps(DEFAULT_MAX_MBPS if max_mbps is None else max_mbps),
        "-fps",
        f"{fps:g}",
        "-time",
        f"{duration_s:.3f}",
        "-log",
        log_path,
        "-ntp",
        *extra,
        dest_ip,
        str(port),
    ]


def receiver_argv(rx: Path | str, *, sender_ip: str, port: int) -> list[str]:
    """``scream_bw_test_rx``: listens on ``port`` and sends its feedback to the sender."""
    return [str(rx), sender_ip, str(port)]


def read_log(path: Path) -> pl.DataFrame:
    """The sender's ``-log`` file: one row per feedback, times as ``t_ns`` (epoch), seconds
    turned into milliseconds (``*_ms``), the unkept columns dropped; a 2023 log lacks
    ``target_bps``, ``rtp_queue_delay_ms`` and ``ref_wnd_i_bytes``."""
    rows: list[list[float]] = []
    times_ns: list[int] = []
    width: int | None = None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise ReferenceLogError(f"{path}: cannot read: {err.strerror}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith('"'):
            continue  # blank, or the -itemlist header
        fields = line.split(",")
        widths = (LOG_WIDTH_2023, len(LOG_COLUMNS), len(LOG_COLUMNS) + len(EXTENDED_COLUMNS))
        if len(fields) not in widths or (width is not None and len(fields) != width):
            if number == len(text.splitlines()):
                break  # the last line of a killed sender may be cut short
            raise ReferenceLogError(
                f"{path}:{number}: {len(fields)} columns, expected "
                f"{width or ' or '.join(map(str, widths))}: not a SCReAM sender log"
            )
        if width is None:
            width = len(fields)
        try:
            rows.append([float(f) for f in fields[:width]])
            times_ns.append(_epoch_ns(fields[0]))
        except ValueError:
            raise ReferenceLogError(f"{path}:{number}: a column is not a number") from None
    names = [*LOG_COLUMNS, *EXTENDED_COLUMNS][: width or len(LOG_COLUMNS)]
    keep = [(i, n) for i, n in enumerate(names) if n is not None]
    data = {n: [r[i] for r in rows] for i, n in keep}
    df = pl.DataFrame(data, schema={n: pl.Float64 for _, n in keep})
    df = df.with_columns(pl.Series("t_ns", times_ns, dtype=pl.Int64)).drop("t_s")
    seconds = [c for c in df.columns if c.endswith("_s")]
    return df.with_columns(
        [(pl.col(c) * 1e3).alias(c.removesuffix("_s") + "_ms") for c in seconds]
    ).drop(seconds)


def _epoch_ns(text: str) -> int:
    """Seconds with a fraction as integer nanoseconds (a float loses the last digits)."""
    whole, _, frac = text.strip().partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()):
        raise ValueError(text)
    return int(whole) * 1_000_000_000 + int((frac + "000000000")[:9])


def log_is_extended(path: Path) -> bool | None:
    """Whether the log has the instrumented build's nine columns; None: no data lines."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip() and not line.startswith('"'):
                return len(line.split(",")) > len(LOG_COLUMNS)
    return None

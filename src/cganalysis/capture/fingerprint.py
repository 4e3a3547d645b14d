"""Which capture file a packet table was made from, without reading the whole file.

The workflow reads raw captures through Snakemake's ``ancient()`` so that a ``dvc pull``
(which gives every file a new modification time) does not make it redo the packet tables.
That alone would also keep the tables of a run that was made again under the same run id:
the match summary therefore records each capture's fingerprint, and the workflow treats a
capture as ancient only while the fingerprint it finds equals the recorded one.

The fingerprint is the file's size and a SHA-256 of its first 64 KiB: the file header and
the first packets with their timestamps, which differ between any two runs; reading it
costs nothing next to the matching (a whole-file checksum of a 10 GB capture would not).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

#: Bytes at the start of a capture that its fingerprint hashes.
HEAD_BYTES = 64 * 1024


def capture_fingerprint(path: Path) -> dict[str, Any]:
    """``{"bytes": size, "head_sha256": hex}`` of the capture file at ``path``."""
    with path.open("rb") as f:
        head = f.read(HEAD_BYTES)
        size = f.seek(0, 2)
    return {"bytes": size, "head_sha256": hashlib.sha256(head).hexdigest()}


def made_from(summary: Path, point: str, capture: Path) -> bool:
    """Whether the match summary ``summary`` (match.json) records ``capture`` as its
    ``point`` (``ingress`` or ``egress``) capture, byte size and head alike. False when
    the summary is missing, unreadable or older than fingerprints: then the files' times
    decide, as for any Snakemake input."""
    try:
        recorded = json.loads(summary.read_text(encoding="utf-8")).get(f"fingerprint_{point}")
    except (OSError, ValueError, AttributeError, RecursionError):  # a crafted match.json
        return False
    return bool(recorded) and recorded == capture_fingerprint(capture)

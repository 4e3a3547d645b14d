"""A run file's TCP congestion control (``competitor.cca``) as a kernel names it.

Mainline Linux has one BBR, version 1, registered as ``bbr``. Google's tree
(github.com/google/bbr) has the others: its ``v2alpha`` branch adds BBRv2 beside it under
the name ``bbr2``; its ``v3`` branch replaces v1 with v3 under the name ``bbr`` itself
(``tcp_bbr.c`` defines ``BBR_VERSION 3``, and the built-in module reports it in
``/sys/module/tcp_bbr/version``). So a run file asks for a BBR by version, ``bbr1``,
``bbr2`` or ``bbr3``, and the run uses the kernel's name for it: ``bbr3`` is ``bbr`` on a
v3 kernel and is refused on any other. ``bbr`` itself means the kernel's ``bbr``, whatever
its version (meta.json records which: the kernel's ``tcp_bbr``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

#: A BBR named by its version in a run file.
VERSIONED_BBR = re.compile(r"bbr([1-9])")
#: Where a built-in or loaded tcp_bbr reports a version (Google's v3: "3"; mainline: none).
BBR_VERSION_FILE = "/sys/module/tcp_bbr/version"
DOCS = 'docs/testbed.md, "Kernels from a source tree"'


def bbr_versions(available: Collection[str], bbr_module_version: str | None) -> dict[str, int]:
    """The version of each BBR among the kernel's ``available`` congestion controls:
    ``bbr2`` is 2; ``bbr`` is what its module reports (``bbr_module_version``), else 1."""
    out: dict[str, int] = {}
    if "bbr" in available:
        text = (bbr_module_version or "").strip()
        out["bbr"] = int(text) if text.isdigit() else 1
    if "bbr2" in available:
        out["bbr2"] = 2
    return out


def parse_bbr_versions(text: str) -> dict[str, int]:
    """scripts/build-uml.sh's ``tcp_bbr`` line of a kernel's .info: ``bbr=3 bbr2=2``."""
    out: dict[str, int] = {}
    for item in text.split():
        name, _, version = item.partition("=")
        if version.isdigit():
            out[name] = int(version)
    return out


def kernel_cca(
    requested: str, available: Collection[str], versions: Mapping[str, int]
) -> str | None:
    """The name under which the kernel offers ``requested``, or None if it does not."""
    if requested in available:
        return requested
    match = VERSIONED_BBR.fullmatch(requested)
    if match is None:
        return None
    wanted = int(match.group(1))
    for name, version in sorted(versions.items()):
        if version == wanted and name in available:
            return name
    return None


def describe(available: Collection[str], versions: Mapping[str, int]) -> str:
    """``bbr cubic reno; bbr is v1``: what the kernel offers, for a refusal."""
    bbrs = ", ".join(f"{name} is v{version}" for name, version in sorted(versions.items()))
    return " ".join(sorted(available)) + (f"; {bbrs}" if bbrs else "")


def refusal(source: str, requested: str, kernel: str, offered: str) -> str:
    """The one line that refuses a run whose kernel lacks ``requested`` (``offered``:
    :func:`describe`'s text)."""
    hint = ""
    if VERSIONED_BBR.fullmatch(requested):
        hint = (
            "; BBRv2 is in Google's tree's v2alpha branch, BBRv3 in its v3 branch: build a "
            "UML kernel from one (CGA_UML_TREE=PATH bash scripts/build-uml.sh) and name it in "
            f"the testbed file ({DOCS})"
        )
    return (
        f"{source}: key competitor.cca: {requested!r} is not offered by {kernel} "
        f"(available: {offered}){hint}"
    )


def recorded_refusal(
    source: str, requested: str, kernel: str, info: Mapping[str, str]
) -> str | None:
    """The refusal of ``requested`` by a kernel whose build says it lacks it, or None where
    it offers it or its build says nothing (the guest checks). scripts/build-uml.sh's
    .info records what the kernel registers (``tcp_available_congestion_control``,
    ``tcp_bbr``); one built before it did is still known to be Debian's mainline source
    (``source linux-source-...``), whose only BBR is v1."""
    recorded = info.get("tcp_available_congestion_control")
    if recorded is not None:
        available = recorded.split()
        versions = parse_bbr_versions(info.get("tcp_bbr", ""))
        if kernel_cca(requested, available, versions) is not None:
            return None
        return refusal(source, requested, kernel, describe(available, versions))
    match = VERSIONED_BBR.fullmatch(requested)
    mainline = info.get("source", "").startswith("linux-source-")
    if mainline and match is not None and match.group(1) != "1":
        return refusal(source, requested, kernel, "mainline Linux's; its bbr is v1")
    return None

"""Which data plane a run's bottleneck and delay use on this host, decided before traffic.

``backend: auto`` takes the kernel's qdiscs when the kernel accepts every discipline the
run needs, else the link emulator ``cga-emu`` when it is on the PATH, else fails. The
propagation delay takes netem where the kernel has it, else a delay-only ``cga-emu`` hop.
Every failure names what is missing and what would provide it.
"""

from __future__ import annotations

from pathlib import Path

from cganalysis.emulator.binary import NAME
from cganalysis.testbed.dataplane.planes import EMULATOR, KERNEL, MAHIMAHI, Resolution, chosen
from cganalysis.testbed.measure.probe import DUALPI2_IPROUTE2, iproute2_version, probe_qdiscs, which
from cganalysis.testbed.rendering.mahimahi import PROGRAMS, link_of, unprivileged_user
from cganalysis.testbed.shared.delays import EMULATOR_HOP, MM_DELAY, NETEM, NO_DELAY, DelayPlacement
from cganalysis.testbed.shared.hosts import Host, TestbedError
from cganalysis.testbed.spec.config import Bottleneck, Direction, Propagation
from cganalysis.testbed.spec.qdisc import Htb
from cganalysis.testbed.spec.qdisc_kinds import EMULATOR_ONLY, KERNEL_ONLY
from cganalysis.testbed.vm.config import in_guest

EMULATOR_PROGRAM = NAME
EMULATOR_HINT = (
    "the link emulator `cga-emu` (built and put on the PATH by `bash scripts/install.sh`)"
)
_KERNEL_HINT = {
    "dualpi2": "a kernel >= 6.17 built with CONFIG_NET_SCH_DUALPI2 (Debian's kernels lack it) "
    "and iproute2 >= 6.18",
    "netem": "a kernel built with CONFIG_NET_SCH_NETEM",
}


def kernel_hint(kind: str) -> str:
    hint = _KERNEL_HINT.get(kind, f"a kernel built with CONFIG_NET_SCH_{kind.upper()}")

    if kind == "dualpi2" and in_guest():
        # The vm testbed's Debian kernel lacks it too; this script builds it for that kernel.
        hint += " (for the vm testbed: `bash scripts/build-dualpi2.sh` builds both)"
    return hint


def kinds_needed(d: Direction) -> list[str]:
    """The kernel disciplines a direction installs."""
    if isinstance(d.qdisc, Htb):
        return ["htb", *sorted({c.leaf.kind for c in d.qdisc.classes})]
    shaper = [] if d.rate_mbit is None else [d.shaper]
    return [*shaper, d.qdisc.kind]


_EMU_ONLY_WHY = {
    "sqf": "qdisc sqf (the kernel has no SQF)",
    "drr": "qdisc drr (cga-emu's per-flow DRR; Linux's drr is classful, another discipline)",
}


def emulator_only(b: Bottleneck) -> list[str]:
    """What in ``b`` only cga-emu can run (empty: the kernel may do it)."""
    out: list[str] = []
    for d in (b.forward, b.reverse):
        if d is None:
            continue
        kinds = [c.leaf.kind for c in d.qdisc.classes] if isinstance(d.qdisc, Htb) else []
        out += [_EMU_ONLY_WHY[k] for k in [d.qdisc.kind, *kinds] if k in EMULATOR_ONLY]
        if d.trace is not None:
            out.append(f"a trace-driven rate ({d.trace}; the kernel cannot follow a trace)")
    return list(dict.fromkeys(out))


def resolve(b: Bottleneck, p: Propagation, host: Host) -> Resolution:
    """Raises TestbedError (naming what is missing) when the host cannot run it."""
    has_emu = which(host, EMULATOR_PROGRAM) is not None
    wanted = chosen(b.backend)  # None: auto, the kernel or the emulator
    if wanted is MAHIMAHI:
        return _resolve_mahimahi(b, p, host)
    emu_only = emulator_only(b)
    if emu_only and wanted is KERNEL:
        raise TestbedError(
            f"bottleneck.backend kernel: {'; '.join(emu_only)}: only the link emulator runs "
            f"it; use backend: emulator or auto ({EMULATOR_HINT})"
        )
    if emu_only and not has_emu:
        raise TestbedError(
            f"bottleneck: {'; '.join(emu_only)} needs {EMULATOR_PROGRAM} on the PATH; it needs "
            f"{EMULATOR_HINT}"
        )
    for d in (b.forward, b.reverse):
        # The controller's copy: the emulator's host gets it staged (EmulatorBottleneck).
        if d is not None and d.trace is not None and not Path(d.trace).is_file():
            raise TestbedError(
                f"bottleneck.trace: {d.trace} not found; relative trace paths "
                "start at the run or campaign file's folder (docs/testbed.md, trace links)"
            )
    kinds = kinds_needed(b.forward) + (kinds_needed(b.reverse) if b.reverse else [])
    kinds = [k for k in dict.fromkeys(kinds) if k not in EMULATOR_ONLY]
    probe_kinds = kinds + (["netem"] if p.needed and p.via != "emulator" else [])
    support = probe_qdiscs(host, probe_kinds)
    lacking = [k for k in kinds if not support[k][0]]
    if "dualpi2" in kinds and not lacking and iproute2_version(host)[1] < DUALPI2_IPROUTE2:
        lacking = ["dualpi2"]  # the kernel has it but this tc cannot pass its options
    if wanted is KERNEL and lacking:
        raise TestbedError(
            f"bottleneck.backend kernel: this kernel lacks qdisc {', '.join(lacking)} "
            f"({support[lacking[0]][1]}); it needs {kernel_hint(lacking[0])}, or use "
            f"backend: emulator ({EMULATOR_HINT})"
        )
    kernel_only = sorted({k for k in kinds if k in KERNEL_ONLY})
    if kernel_only and (wanted is EMULATOR or (wanted is None and lacking)):
        raise TestbedError(
            f"bottleneck: qdisc {', '.join(kernel_only)} runs in the kernel only (qdiscs.json), "
            f"not in {EMULATOR_PROGRAM}; it needs {kernel_hint(kernel_only[0])}"
        )
    if wanted is EMULATOR and not has_emu:
        raise TestbedError(
            f"bottleneck.backend emulator: {EMULATOR_PROGRAM} not found; it needs {EMULATOR_HINT}"
        )
    if wanted is None and lacking and not has_emu:
        raise TestbedError(
            f"bottleneck: qdisc {', '.join(lacking)} is not available: this kernel lacks it "
            f"({support[lacking[0]][1]}) and {EMULATOR_PROGRAM} is not on the PATH; it needs "
            f"{kernel_hint(lacking[0])}, or {EMULATOR_HINT}"
        )
    use_emu = wanted is EMULATOR or (wanted is None and bool(lacking or emu_only))
    reason = f"backend {b.backend}"
    if use_emu and (lacking or emu_only):
        reason = "; ".join(
            [*([f"kernel lacks {', '.join(lacking)}"] if lacking else []), *emu_only]
        )
    return Resolution(
        EMULATOR if use_emu else KERNEL,
        _delay_via(p, support.get("netem", (False, None)), has_emu),
        reason,
    )


def _resolve_mahimahi(b: Bottleneck, p: Propagation, host: Host) -> Resolution:
    missing = [t for t in PROGRAMS if which(host, t) is None]
    if missing:
        raise TestbedError(
            f"bottleneck.backend mahimahi: {', '.join(missing)} not found on {host.name} "
            "(mahimahi not installed): `bash scripts/install.sh` installs the distribution's "
            "package where there is one (Ubuntu's mahimahi; Debian has none), else install "
            "mahimahi yourself; or use backend: emulator, which replays the same traces"
        )
    link = link_of(b, p)  # what mahimahi cannot do is a ConfigError naming the key
    for trace in (link.down_trace, link.up_trace):
        if trace is not None and not Path(trace).is_file():
            raise TestbedError(f"bottleneck.trace: {trace} not found")
    user = unprivileged_user()
    return Resolution(
        MAHIMAHI,
        MM_DELAY if link.delay_ms else NO_DELAY,
        f"backend mahimahi (mm-link as {user}"
        + (f", mm-delay {link.delay_ms} ms)" if link.delay_ms else ")"),
    )


def _delay_via(p: Propagation, netem: tuple[bool, str | None], has_emu: bool) -> DelayPlacement:
    if not p.needed:
        return NO_DELAY
    if p.via in ("auto", "netem") and netem[0]:
        return NETEM
    if p.via in ("auto", "emulator") and has_emu:
        return EMULATOR_HOP
    wanted = "netem" if p.via == "netem" else f"netem or {EMULATOR_PROGRAM}"
    raise TestbedError(
        f"propagation: a delay of {p.forward_ms:g}/{p.reverse_ms:g} ms (jitter "
        f"{p.jitter_ms:g} ms, loss {p.loss:g}) needs {wanted}: this kernel lacks netem "
        f"({netem[1] or 'not probed'}); it needs {kernel_hint('netem')}, or {EMULATOR_HINT}. "
        "For runs without delay set propagation.forward_ms and reverse_ms to 0"
    )


def resolve_in_router_kernel(b: Bottleneck, p: Propagation, host: Host, where: str) -> Resolution:
    """The data planes of a testbed whose router is a kernel of its own (uml): that
    kernel's qdiscs and netem, or a refusal naming what it lacks (never the emulator)."""
    wanted = chosen(b.backend)
    if wanted is not None and not wanted.in_kernel:
        raise TestbedError(
            f"bottleneck.backend {b.backend}: the {where} testbed's router is a Linux kernel "
            "(use backend: kernel or auto, or testbed: netns for the emulator)"
        )
    emu_only = emulator_only(b)
    if emu_only:
        raise TestbedError(
            f"bottleneck: {'; '.join(emu_only)}: only the link emulator runs it; the {where} "
            "testbed's router is a Linux kernel (use testbed: netns)"
        )
    if p.needed and p.via == "emulator":
        raise TestbedError(
            f"propagation.via emulator: the {where} testbed delays in its router kernel "
            "(netem); use via: auto or netem"
        )
    kinds = kinds_needed(b.forward) + (kinds_needed(b.reverse) if b.reverse else [])
    kinds = list(dict.fromkeys(kinds + (["netem"] if p.needed else [])))
    support = probe_qdiscs(host, kinds)
    lacking = [k for k in kinds if not support[k][0]]
    if "dualpi2" in kinds and not lacking and iproute2_version(host)[1] < DUALPI2_IPROUTE2:
        lacking = ["dualpi2"]
    release = host.run(["uname", "-r"], check=False).stdout.strip() or "?"
    if lacking:
        hint = (
            "`bash scripts/build-uml.sh` builds a UML kernel with it (and a tc >= 6.18)"
            if "dualpi2" in lacking
            else kernel_hint(lacking[0])
        )
        raise TestbedError(
            f"bottleneck: the {where} router's kernel ({release}) lacks qdisc "
            f"{', '.join(lacking)} ({support[lacking[0]][1] or 'tc too old'}); {hint}"
        )
    return Resolution(KERNEL, NETEM if p.needed else NO_DELAY, f"{where} router kernel {release}")

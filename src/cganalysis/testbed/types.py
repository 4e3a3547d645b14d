"""The registry of testbed types: what each of ``netns``, ``uml``, ``ssh``, ``vm`` and ``sim`` is,
in one place, so that a run's plan and build (and a testbed file's reader) look a type up
instead of comparing names.

A type says whether its server and client are namespaces of this machine (``local``: root
and this machine's tools are needed, and the testbed shares this machine's lock), whether
a run file may name it without a testbed file, how its testbed file's own keys are
checked, which host decides what a run can use (``probing``; ``router_probing`` when the
router has a kernel of its own), and how it is built. Adding a testbed type is one entry
here plus its package ``testbed/<type>/`` (docs/architecture.md).

Implementations are imported when used: reading a run file must not import QEMU's or the
UML kernel's drivers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cganalysis.testbed.shared.hosts import Host
    from cganalysis.testbed.shared.topology import Layout, Testbed

#: Checks a testbed file's keys for its type (errors name the file and key); returns the
#: testbed's own name where the type has one (a second netns testbed on this machine).
ParseFile = Callable[[Any, str], "str | None"]
Probing = Callable[[Path | None], AbstractContextManager["Host"]]
Build = Callable[["Layout", Path, Path | None], "Testbed"]
#: Undoes what a dead run of the type left besides its namespaces (``testbed clean``):
#: (its state file's record, dry run) -> one line per thing done or that would be.
Clean = Callable[[dict[str, Any], bool], Iterable[str]]


@dataclass(frozen=True)
class TestbedType:
    name: str
    #: Server and client are network namespaces of this machine: the run needs root (or a
    #: user namespace: netns/userns.py) and this machine's tools, and takes this machine's
    #: lock (same cores, same timers).
    local: bool
    #: A run file may say just the name (``testbed: uml``), without a testbed file.
    bare: bool
    #: Its testbed file holds nothing but a name: a file without one is the bare type.
    names_only: bool
    #: mahimahi's shell can sit between its router and client (namespaces on one machine).
    mahimahi: bool
    #: A run may keep the kernel's offloads (``offloads: kernel``): every hop from server to
    #: client is a kernel's, joined by veths (and, for a UML router, raw sockets with
    #: virtio-net headers) that pass TSO super-packets.
    offloads: bool
    #: Its clock is simulated: it advances only when every process of the run is idle (a
    #: CG source that spins or polls the clock cannot run there: its
    #: ``simulated_clock_refusal``).
    simulated_clock: bool
    #: Inside its own guest, the type this process builds (a vm run is a netns run there).
    guest_builds: str | None
    #: With ``guest_builds``: whether this process is that guest.
    in_guest: Callable[[], bool] | None
    parse_file: ParseFile
    #: The host whose tools and kernel decide what the run can use (read-only checks).
    probing: Probing
    #: The router's own kernel, when it is not the probing host's (uml).
    router_probing: Probing | None
    build: Build
    #: What ``testbed clean`` undoes beyond the namespaces (None: nothing).
    clean: Clean | None = None


def _parse_netns(data: Any, where: str) -> str | None:
    from cganalysis.testbed.spec.validate import TOKEN, Section

    sec = Section(data, where)
    sec.choice("backend", ("netns",))
    name = sec.opt_string("name", pattern=TOKEN)
    sec.finish()
    return name


def _parse_uml(data: Any, where: str) -> str | None:
    from cganalysis.testbed.uml.config import parse_options

    parse_options(data, where)
    return None


def _parse_ssh(data: Any, where: str) -> str | None:
    from cganalysis.testbed.ssh.testbed import parse_testbed

    parse_testbed(data, where)
    return None


def _parse_vm(data: Any, where: str) -> str | None:
    from cganalysis.testbed.vm.config import parse_options

    parse_options(data, where)
    return None


@contextmanager
def _probing_this_machine(kind: str) -> Iterator[Host]:
    from cganalysis.testbed.netns import userns
    from cganalysis.testbed.shared.hosts import NetnsHost, TestbedError

    if os.geteuid() != 0 and not userns.inside():
        raise TestbedError(
            f"the {kind} testbed needs root (network namespaces, tc) or a user namespace of "
            "its own: `cganalysis experiment` makes one for an ordinary user"
        )
    yield NetnsHost("this host", None, Path("/"))


def _probing_local(kind: str) -> Probing:
    def probing(path: Path | None) -> AbstractContextManager[Host]:
        return _probing_this_machine(kind)

    return probing


def _probing_uml_router(path: Path | None) -> AbstractContextManager[Host]:
    from cganalysis.testbed.uml.boot import probing_uml

    return probing_uml(path)


def _probing_ssh(path: Path | None) -> AbstractContextManager[Host]:
    from cganalysis.testbed.ssh.testbed import probing_ssh

    assert path is not None, "an ssh testbed always has a testbed file"
    return probing_ssh(path)


def _probing_vm(path: Path | None) -> AbstractContextManager[Host]:
    from cganalysis.testbed.vm.run import probing_vm

    return probing_vm(path)


def _clean_ssh(st: dict[str, Any], dry_run: bool) -> Iterable[str]:
    from cganalysis.testbed.ssh.clean import clean_remote

    return clean_remote(st, dry_run)


def _clean_vm(st: dict[str, Any], dry_run: bool) -> Iterable[str]:
    from cganalysis.testbed.vm.testbed import clean_vm

    return clean_vm(st, dry_run)


def _clean_uml(st: dict[str, Any], dry_run: bool) -> Iterable[str]:
    """The kernel died with its namespace; its control folder stays."""
    from cganalysis.testbed.uml.testbed import clean_control_folder

    return clean_control_folder(st, dry_run)


def _build_netns(layout: Layout, workdir: Path, path: Path | None) -> Testbed:
    from cganalysis.testbed.netns.testbed import NetnsTestbed

    return NetnsTestbed(layout, workdir)


def _build_uml(layout: Layout, workdir: Path, path: Path | None) -> Testbed:
    from cganalysis.testbed.uml.config import load_options
    from cganalysis.testbed.uml.testbed import UmlTestbed

    return UmlTestbed(layout, workdir, load_options(path))


def _build_ssh(layout: Layout, workdir: Path, path: Path | None) -> Testbed:
    from cganalysis.testbed.ssh.testbed import SshTestbed

    assert path is not None, "an ssh testbed always has a testbed file"
    return SshTestbed.from_file(path, layout, workdir)


def _parse_sim(data: Any, where: str) -> str | None:
    from cganalysis.testbed.sim.config import parse_options

    parse_options(data, where)
    return None


def _probing_sim(path: Path | None) -> AbstractContextManager[Host]:
    raise AssertionError("a sim run is planned inside its guest, as netns")


def _build_sim(layout: Layout, workdir: Path, path: Path | None) -> Testbed:
    # Built inside the guest only: on the host, the kernel on simulated time runs the run.
    from cganalysis.testbed.sim.guest import SimNetnsTestbed

    return SimNetnsTestbed(layout, workdir)


def _in_vm() -> bool:
    from cganalysis.testbed.vm.config import in_guest

    return in_guest()


def _in_sim() -> bool:
    from cganalysis.testbed.sim.guest import in_guest

    return in_guest()


def _build_vm(layout: Layout, workdir: Path, path: Path | None) -> Testbed:
    # Built inside the guest only: on the host, the guest runs the whole run.
    from cganalysis.testbed.vm.guest import VmNetnsTestbed

    return VmNetnsTestbed(layout, workdir)


TESTBED_TYPES: dict[str, TestbedType] = {
    t.name: t
    for t in (
        TestbedType(
            "netns",
            simulated_clock=False,
            names_only=True,
            local=True,
            bare=True,
            mahimahi=True,
            offloads=True,
            guest_builds=None,
            in_guest=None,
            parse_file=_parse_netns,
            probing=_probing_local("netns"),
            router_probing=None,
            build=_build_netns,
        ),
        TestbedType(
            "uml",
            simulated_clock=False,
            names_only=False,
            local=True,
            bare=True,
            mahimahi=False,
            offloads=True,
            guest_builds=None,
            in_guest=None,
            parse_file=_parse_uml,
            probing=_probing_local("uml"),
            router_probing=_probing_uml_router,
            build=_build_uml,
            clean=_clean_uml,
        ),
        TestbedType(
            "ssh",
            simulated_clock=False,
            names_only=False,
            local=False,
            bare=False,
            mahimahi=False,
            offloads=False,
            guest_builds=None,
            in_guest=None,
            parse_file=_parse_ssh,
            probing=_probing_ssh,
            router_probing=None,
            build=_build_ssh,
            clean=_clean_ssh,
        ),
        TestbedType(
            "vm",
            simulated_clock=False,
            names_only=False,
            local=False,
            bare=True,
            mahimahi=False,
            offloads=True,
            guest_builds="netns",
            in_guest=_in_vm,
            parse_file=_parse_vm,
            probing=_probing_vm,
            router_probing=None,
            build=_build_vm,
            clean=_clean_vm,
        ),
        TestbedType(
            "sim",
            simulated_clock=True,
            names_only=False,
            # Namespaces of its own kernel, not of this machine: no machine lock (its runs
            # share no timing with anything), root only to start the kernel.
            local=False,
            bare=True,
            mahimahi=False,
            offloads=True,
            guest_builds="netns",
            in_guest=_in_sim,
            parse_file=_parse_sim,
            probing=_probing_sim,
            router_probing=None,
            build=_build_sim,
        ),
    )
}


def testbed_type(kind: str) -> TestbedType:
    """The registered type ``kind`` (names come from checked configuration)."""
    return TESTBED_TYPES[kind]


def built_here(kind: str) -> TestbedType:
    """The type this process builds for a run on ``kind``: inside a vm guest, the type the
    guest builds (netns), else ``kind`` itself."""
    t = TESTBED_TYPES[kind]
    if t.guest_builds is not None and t.in_guest is not None and t.in_guest():
        return TESTBED_TYPES[t.guest_builds]
    return t

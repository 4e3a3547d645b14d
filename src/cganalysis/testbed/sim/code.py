"""The code a ``sim`` guest runs, at fixed paths whatever folder it lives in on the host.

Paths reach the guest's randomness: the interpreter's is on the kernel's command line
(which the kernel mixes into its random pool at boot) and every guest Python searches its
``sys.path``, and UML mixes how long each guest process ran into the pool when it exits.
Measured: the same venv reached through a symbolic link gave other captures. So the
kernel's mount namespace shows the code at :data:`CODE`, a folder of its tmpfs over
``/mnt``, laid out as a virtual environment of its own:

- ``bin/python``: the host's interpreter binary (bound);
- ``base``: the interpreter's installation (``sys.base_prefix``, its standard library),
  which ``pyvenv.cfg``'s ``home`` points at;
- ``checkout/src``: the folder this package is imported from (a checkout's ``src``, or a
  wheel's ``site-packages``), with the checkout's ``requirements`` and ``pyproject.toml``
  beside it (the lock a run records);
- ``site/0``, ``site/1``...: the host's site-packages (the dependencies), in order;
- the ``.pth`` file of ``lib/pythonX.Y/site-packages``: names ``checkout/src`` and the
  ``site`` folders. The host's own ``.pth`` files are not read (an editable install's
  names a host path, and the guest would import that copy instead of the one bound).

A guest started as ``CODE/bin/python`` and every Python process it starts (they inherit
``sys.executable``) then sees the same names on every host, and the same packets come out
of two checkouts in two folders (tested).
"""

from __future__ import annotations

import platform
import site
import sys
from dataclasses import dataclass
from pathlib import Path

#: Where the guest sees the code (a folder of the kernel's tmpfs over /mnt).
CODE = "/mnt/cga-code"
#: The guest's interpreter: ``init=`` on the kernel's command line.
PYTHON = f"{CODE}/bin/python"
#: The folder the guest imports this package from.
SOURCE = f"{CODE}/checkout/src"
#: What of a checkout besides its source the guest reads (dependencies.lock_record).
CHECKOUT_PARTS = ("requirements", "pyproject.toml")


@dataclass(frozen=True)
class GuestCode:
    """The host paths behind :data:`CODE` (all resolved: a link's name would not matter
    anyway, since the guest never sees it)."""

    interpreter: Path
    base: Path
    source: Path
    site_dirs: tuple[Path, ...]
    checkout_parts: tuple[Path, ...]

    def binds(self) -> list[tuple[str, str]]:
        """(host path, guest path) pairs, bound in this order."""
        pairs = [
            (self.interpreter, PYTHON),
            (self.base, f"{CODE}/base"),
            (self.source, SOURCE),
            *((p, f"{CODE}/checkout/{p.name}") for p in self.checkout_parts),
            *((p, f"{CODE}/site/{i}") for i, p in enumerate(self.site_dirs)),
        ]
        return [(str(host), guest) for host, guest in pairs]

    def files(self) -> list[tuple[str, str]]:
        """(guest path, text) of the files written into the layout."""
        lib = f"python{sys.version_info.major}.{sys.version_info.minor}"
        pth = [SOURCE, *(f"{CODE}/site/{i}" for i in range(len(self.site_dirs)))]
        home = f"{CODE}/base/{self.interpreter.parent.relative_to(self.base)}"
        cfg = (
            f"home = {home}\ninclude-system-site-packages = false\n"
            f"version = {platform.python_version()}\n"
        )
        return [
            (f"{CODE}/pyvenv.cfg", cfg),
            (f"{CODE}/lib/{lib}/site-packages/cganalysis.pth", "\n".join(pth) + "\n"),
        ]

    def host_paths(self) -> dict[str, object]:
        """Where the code is on this host: information only (meta.json), never an input."""
        return {
            "interpreter": str(self.interpreter),
            "base": str(self.base),
            "source": str(self.source),
            "site": [str(p) for p in self.site_dirs],
        }


def guest_code() -> GuestCode:
    """This process's code: its interpreter, the package it imported and its site-packages."""
    import cganalysis

    source = Path(cganalysis.__file__).resolve().parent.parent
    interpreter = Path(sys.executable).resolve()
    base = Path(sys.base_prefix).resolve()
    if not interpreter.is_relative_to(base):
        # A copied binary outside its installation: its folder is the one pyvenv.cfg names.
        base = interpreter.parent.parent
    sites: list[Path] = []
    for p in site.getsitepackages():
        real = Path(p).resolve()
        if real.is_dir() and real not in sites and real != source:
            sites.append(real)
    parts = tuple(source.parent / n for n in CHECKOUT_PARTS if (source.parent / n).exists())
    return GuestCode(interpreter, base, source, tuple(sites), parts)

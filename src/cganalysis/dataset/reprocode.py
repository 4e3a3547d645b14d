"""The code that made a published sim run, checked out and run again
(``cganalysis dataset reproduce``).

A run's packets depend on the code that made it (meta.json's ``controller.git.commit``):
the commit is extracted from the repository (``git archive``, no work tree is touched)
into a cache folder of its own, and its own ``cganalysis experiment`` makes the run. Where
its Rust sources (``native/``) are this checkout's, it is given this installation's native
extension and programs; where they differ, they are built from the commit's sources
(``cargo build --locked --release``, a target folder shared by the commits of one cache),
and the run uses them: the extension in its package; ``cga-cg`` and the simulation's
random source, as root, bound over the installed files in a mount namespace of the run's
own (the guest sees them where the recorded run's did, its environment unchanged), else
through ``$CGA_CG_BIN`` and ``$CGA_SIMRNG_LIB`` (the guest's environment then differs from
the recorded run's, which is said).

Code from before the guest's fixed paths (:mod:`cganalysis.testbed.sim.code`)
imported the package from wherever the venv named it on the host, and those paths reach
the packets: such a run is made in a mount namespace where the checked-out package is
bound over the package that interpreter imports, so the old code runs under the names it
ran under.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.cg.binary import BINARY_ENV, BINARY_NAME
from cganalysis.errors import ConfigError
from cganalysis.testbed.sim import code as simcode
from cganalysis.testbed.sim.config import SIMRNG_ENV

#: Prints where the package an interpreter imports is.
WHERE = "import cganalysis, os; print(os.path.dirname(cganalysis.__file__))"
#: What the native extension is built from: equal at both commits, this one's is reused.
RUST_SOURCES = ("native", "Cargo.toml", "Cargo.lock")
#: The workspace's packages a sim run uses, built from a commit's sources where they differ.
CRATES = ("cga-native", "cga-cg", "cga-simrng")
#: What each build is called, in ``target/release`` and in the checkout's ``bin`` folder.
EXTENSION = "lib_native.so"
SIMRNG = "libcga_simrng.so"


@dataclass(frozen=True)
class CheckedOut:
    """A commit's code, extracted: its folder, and its own builds of ``cga-cg`` and of the
    simulation's random source where its Rust sources are not this checkout's (else
    empty: this installation's serve)."""

    path: Path
    builds: dict[str, Path] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """The variables that point a run at :attr:`builds` (where they cannot be bound)."""
        names = {BINARY_NAME: BINARY_ENV, SIMRNG: SIMRNG_ENV}
        return {names[name]: str(path) for name, path in self.builds.items()}


def _git(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *argv], capture_output=True, text=True, check=False
    )


def recorded_commit(meta: dict[str, Any], where: str) -> str:
    commit = str(((meta.get("controller") or {}).get("git") or {}).get("commit") or "")
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise ConfigError(
            f"{where}: key controller.git.commit: {commit[:40]!r} is no commit: the code "
            "that made the run is unknown, so it cannot be run again"
        )
    return commit


def check_out(root: Path, commit: str, cache: Path) -> CheckedOut:
    """``commit`` of the repository at ``root``, extracted into ``cache/COMMIT`` (once)
    with its native extension and programs (:data:`CRATES`: this installation's, or built
    from its sources); readable by every user (the sim kernel's user reads it)."""
    if _git(root, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        raise ConfigError(
            f"the dataset's code, commit {commit[:12]}, is not in {root}'s history (a shallow "
            f"clone?): `git -C {root} fetch --unshallow` (or fetch that commit), then again"
        )
    own = bool(_git(root, "diff", "--name-only", commit, "--", *RUST_SOURCES).stdout.split())
    dest = cache / commit
    if not (dest / "src" / "cganalysis").is_dir():
        _extract(root, commit, cache, own)
    if not own:
        return CheckedOut(dest)
    return CheckedOut(dest, {name: dest / "bin" / name for name in (BINARY_NAME, SIMRNG)})


def _extract(root: Path, commit: str, cache: Path, own: bool) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}-", dir=cache))
    try:
        archive = subprocess.Popen(
            ["git", "-C", str(root), "archive", "--format=tar", commit],
            stdout=subprocess.PIPE,
        )
        subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise ConfigError(f"git archive {commit[:12]} failed in {root}")
        package = tmp / "src" / "cganalysis"
        if own:
            release = _build(tmp, commit, cache / ".target")
            (tmp / "bin").mkdir()
            shutil.copy2(release / EXTENSION, package / "_native.abi3.so")
            shutil.copy2(release / BINARY_NAME, tmp / "bin" / BINARY_NAME)
            shutil.copy2(release / SIMRNG, tmp / "bin" / SIMRNG)
        else:
            from cganalysis import _native

            shutil.copy2(_native.__file__, package / Path(_native.__file__).name)
        subprocess.run(["chmod", "-R", "a+rX", str(tmp)], check=True)
        tmp.rename(cache / commit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build(tree: Path, commit: str, target: Path) -> Path:
    """Builds :data:`CRATES` from ``tree`` (the lock's versions, offline where the crates
    are fetched already) into ``target``; returns its ``release`` folder."""
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    if not Path(cargo).is_file():
        raise ConfigError(
            f"the dataset's code, commit {commit[:12]}, has other Rust sources than this "
            "checkout, and building them needs cargo, which is not on the PATH: "
            "`bash scripts/install.sh` installs it"
        )
    argv = [cargo, "build", "--quiet", "--locked", "--release"]
    argv += [arg for crate in CRATES for arg in ("-p", crate)]
    built = subprocess.run(
        argv, cwd=tree, env={**os.environ, "CARGO_TARGET_DIR": str(target)}, check=False
    )
    if built.returncode != 0:
        raise ConfigError(
            f"the dataset's code, commit {commit[:12]}: `cargo build` of its Rust sources "
            f"failed (status {built.returncode}, its output above)"
        )
    return target / "release"


def canonical(meta: dict[str, Any]) -> bool:
    """Whether the run's guest saw its code at the fixed paths."""
    ident = ((meta.get("testbed") or {}).get("sim") or {}).get("identity") or {}
    return (ident.get("interpreter") or {}).get("path") == simcode.PYTHON


def experiment_argv(
    code: Path, argv: list[str], meta: dict[str, Any], binds: list[tuple[Path, str]]
) -> list[str]:
    """The command that runs ``cganalysis ARGV`` with the checked-out code: its package
    first on the search path. In a mount namespace of its own (root only), each of
    ``binds`` (a file, the path it is shown at) and, for code from before the fixed paths,
    the checked-out package bound over the package this interpreter imports without
    ``PYTHONPATH`` (what the old guest imported: the venv names it)."""
    run = [sys.executable, "-m", "cganalysis.cli", *argv]
    if canonical(meta):
        run = ["env", f"PYTHONPATH={code / 'src'}", *run]
    else:
        if os.geteuid() != 0:
            raise ConfigError(
                "the run was made before sim guests saw their code at fixed paths: making "
                "it again binds the dataset's code over this venv's package, which needs "
                "root (run reproduce with sudo)"
            )
        binds = [*binds, (code / "src" / "cganalysis", venv_package())]
        run = ["env", "-u", "PYTHONPATH", *run]
    if not binds:
        return run
    pairs = [str(part) for pair in binds for part in pair]
    return [
        "unshare", "--mount", "--propagation", "private", "sh", "-c", BIND_ALL, "sh",
        *pairs, "--", *run,
    ]  # fmt: skip


#: Binds each pair of arguments up to ``--``, then runs the rest.
BIND_ALL = (
    'while [ "$1" != "--" ]; do mount --bind "$1" "$2" || exit 125; shift 2; done; shift; exec "$@"'
)


def venv_package() -> str:
    """The package this interpreter imports without ``PYTHONPATH``: the one the guest of
    code from before the fixed paths imported (the venv's own, an editable install's
    checkout)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", WHERE],
        capture_output=True, text=True, check=True, env=env,
    ).stdout.strip()  # fmt: skip

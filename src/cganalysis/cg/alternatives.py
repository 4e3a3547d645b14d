"""Other CG sources a run configuration may select instead of ``cga-cg``.

- ``scream-bw-test``: Ericsson's SCReAM BW test programs (``scream_bw_test_tx`` /
  ``scream_bw_test_rx`` from github.com/EricssonResearch/scream, BSD-2), on hosts where
  they are built; the paths come from the configuration. Their RFC 8888 reports count
  ``num_reports`` as blocks - 1, so a ``cga-cg receive`` facing their sender needs
  ``--num-reports count-minus-one``.
- ``ecgp``: the TMA 2024 platform (eCGP, GPL-3) on bare hosts with an NVIDIA encoder and
  a person playing; it cannot be started from here, the configuration only records it.

A configuration names one with ``{"generator": NAME, ...}``; see docs/cg.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.cg.binary import find_binary
from cganalysis.cg.options import ReceiveOptions, SendOptions, parse_endpoint
from cganalysis.errors import ConfigError

GENERATORS: tuple[str, ...] = ("cga-cg", "scream-bw-test", "ecgp")


@dataclass(frozen=True)
class Generator:
    """Which program makes the CG traffic, and where it is."""

    name: str
    tx_path: Path | None = None
    rx_path: Path | None = None

    def sender_argv(self, opts: SendOptions, log_dir: Path | None = None) -> list[str]:
        if self.name == "cga-cg":
            return opts.argv(find_binary(), log_dir)
        if self.name == "scream-bw-test":
            assert self.tx_path is not None
            ip, port = parse_endpoint(opts.dest, "destination")
            ect = {"ect1": "1", "ect0": "0", "none": "-1", None: "1"}[opts.ecn]
            argv = [str(self.tx_path), "-ect", ect]
            argv += ["-initrate", f"{opts.start_mbps * 1000:.0f}"]
            argv += ["-minrate", f"{opts.min_mbps * 1000:.0f}"]
            argv += ["-maxrate", f"{opts.max_mbps * 1000:.0f}"]
            argv += ["-fps", f"{opts.fps:g}"]
            if opts.duration_s is not None:
                argv += ["-time", f"{opts.duration_s:g}"]
            if opts.qdelay_target_ms is not None:
                argv += ["-delaytarget", f"{opts.qdelay_target_ms / 1000:g}"]
            if log_dir is not None:
                argv += ["-log", str(log_dir / "scream_tx.log")]
            return [*argv, *opts.extra, ip, str(port)]
        raise ConfigError(
            f"generator {self.name!r} cannot be started by cganalysis (eCGP needs its own "
            "hosts and a player); record its captures as a run instead"
        )

    def receiver_argv(
        self, opts: ReceiveOptions, sender: str, log_dir: Path | None = None
    ) -> list[str]:
        """``sender`` is the sender's IP:PORT (Ericsson's receiver needs it)."""
        if self.name == "cga-cg":
            return opts.argv(find_binary(), log_dir)
        if self.name == "scream-bw-test":
            assert self.rx_path is not None
            ip, port = parse_endpoint(sender, "sender address")
            return [str(self.rx_path), *opts.extra, ip, str(port)]
        raise ConfigError(f"generator {self.name!r} cannot be started by cganalysis")


def generator_from_config(config: Mapping[str, Any], where: str = "generator") -> Generator:
    """Reads ``{"generator": "cga-cg" | "scream-bw-test" | "ecgp", "tx_path", "rx_path"}``."""
    name = config.get("generator", "cga-cg")
    if name not in GENERATORS:
        raise ConfigError(f"{where}.generator {name!r}: expected one of {', '.join(GENERATORS)}")
    if name != "scream-bw-test":
        return Generator(name)
    paths: dict[str, Path] = {}
    for key in ("tx_path", "rx_path"):
        value = config.get(key)
        if not value:
            raise ConfigError(
                f"{where}.{key}: scream-bw-test needs the path of Ericsson's "
                f"{'scream_bw_test_tx' if key == 'tx_path' else 'scream_bw_test_rx'}"
            )
        p = Path(value)
        if not p.is_file():
            raise ConfigError(
                f"{where}.{key} {value}: no such file (build EricssonResearch/scream)"
            )
        paths[key] = p
    return Generator(name, tx_path=paths["tx_path"], rx_path=paths["rx_path"])

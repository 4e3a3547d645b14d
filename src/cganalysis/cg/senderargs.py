"""What ``cg.sender_args`` may add to a CG sender's command line: an allow-list per sender.

Run files come from other labs and run as root, so a word is never passed because of its
type alone. Each option is listed with its values (a number in a range, or a choice);
options that name files (``--frames``, ``--log``, Ericsson's ``-log``) and options the
pipeline sets itself (destination, rates, duration, ECN, binding, logs) are not listed:
the sender's parser keeps the last value, so a second ``--log DIR`` would win.
Values are plain decimal numbers (no sign, no ``inf``), so none starts with a dash that a
parser could read as an option. ``--name=VALUE`` is refused: give two words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cganalysis.errors import ConfigError

#: A non-negative decimal number as a word: 10, 0.0625, 1e-05.
NUMBER_WORD = re.compile(r"[0-9]{1,20}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?")


@dataclass(frozen=True)
class Number:
    minimum: float
    maximum: float
    integer: bool = False
    exclusive_minimum: bool = False

    def accepts(self, word: str) -> bool:
        if not NUMBER_WORD.fullmatch(word) or (self.integer and not word.isdigit()):
            return False
        v = float(word)
        above = v > self.minimum if self.exclusive_minimum else v >= self.minimum
        return math.isfinite(v) and above and v <= self.maximum

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        low = "(" if self.exclusive_minimum else "["
        return f"{kind} in {low}{self.minimum:g}, {self.maximum:g}]"


@dataclass(frozen=True)
class Choice:
    words: tuple[str, ...]

    def accepts(self, word: str) -> bool:
        return word in self.words

    def describe(self) -> str:
        return " or ".join(self.words)


Value = Number | Choice

#: ``cga-cg send`` (native/cg/src/cli.rs, docs/cg.md): the options a run may tune. Not
#: here: --cc, --ecn, --duration, --min/start/max/rate-mbps (cg.* keys), --bind, --log
#: (set by the pipeline) and --frames (a file).
CGA_CG_SEND: Mapping[str, tuple[Value, ...]] = {
    "--dscp": (Number(0, 63, integer=True),),
    "--fps": (Number(0, 1000, exclusive_minimum=True),),
    "--gtfrc-target-mbps": (Number(0, 100_000, exclusive_minimum=True),),
    "--keyframe-interval": (Number(0, 3600),),
    "--keyframe-factor": (Number(0, 1000, exclusive_minimum=True),),
    "--frame-size-cv": (Number(0, 100),),
    "--encoder-lag-ms": (Number(0, 600_000),),
    "--seed": (Number(0, 2**64 - 1, integer=True),),
    "--qdelay-target-ms": (Number(0, 600_000, exclusive_minimum=True),),
    "--profile": (Choice(("ericsson", "ericsson-2023", "draft")),),
    "--delay-sampling": (Choice(("ericsson", "draft")),),
    "--loss-detection": (Choice(("ericsson", "ericsson-2023", "draft")),),
    "--reduce-jitter": (),
    "--adapt-qdelay-target": (),
    "--conditional-loss-backoff": (),
    "--relaxed-pacing": (),
    "--l4s-alpha-gain": (Number(0, 1, exclusive_minimum=True),),
    "--pace-factor": (Number(0, 100, exclusive_minimum=True),),
    "--ssrc": (Number(0, 2**32 - 1, integer=True),),
    "--pt": (Number(0, 127, integer=True),),
    "--max-payload": (Number(64, 65_000, integer=True),),
    "--max-rtp-queue-ms": (Number(0, 600_000),),
    "--spin-us": (Number(0, 1_000_000),),
    "--burst-us": (Number(0, 1_000_000),),
    "--send-loop": (Choice(("schedule", "ericsson-test")),),
    "--feedback-timeout-ms": (Number(0, 600_000, exclusive_minimum=True),),
    "--reorder-window-ms": (Number(0, 600_000),),
    "--num-reports": (Choice(("count", "count-minus-one")),),
    "--quiet": (),
}

#: Ericsson's ``scream_bw_test_tx`` (its usage text; cg/reference.py sets -ect, -initrate,
#: -minrate, -maxrate, -fps, -time, -log and -ntp). Not here: -log, -append, -itemlist,
#: -detailed (its log file and format), -if, -sierralog, -verbose, -pushtraffic (other
#: interfaces, ports and packets), -dscale (its parser reads it as -scale).
SCREAM_BW_TEST_TX: Mapping[str, tuple[Value, ...]] = {
    "-key": (Number(0, 3600, exclusive_minimum=True), Number(0, 1000, exclusive_minimum=True)),
    "-rand": (Number(0, 100),),
    "-nopace": (),
    "-clockdrift": (),
    "-nosummary": (),
    "-scale": (Number(0, 1, exclusive_minimum=True),),
    "-delaytarget": (Number(0, 10, exclusive_minimum=True),),
    "-mtu": (Number(64, 65_000, integer=True),),
    "-rateincrease": (Number(1, 10_000_000, integer=True),),
    "-ratescale": (Number(0, 100, exclusive_minimum=True),),
    "-burst": (Number(0, 3600), Number(0, 3600)),
}

#: The allow-list of each CG source that takes ``cg.sender_args``.
SENDER_OPTIONS: Mapping[str, Mapping[str, tuple[Value, ...]]] = {
    "cga-cg": CGA_CG_SEND,
    "scream-reference": SCREAM_BW_TEST_TX,
}

#: How much of a refused word a message shows (a word may be long or hold newlines).
_SHOWN = 40


def _shown(word: str) -> str:
    return repr(word if len(word) <= _SHOWN else word[:_SHOWN] + "...")


def check_sender_args(source: str, words: Sequence[str], where: str) -> tuple[str, ...]:
    """``words`` if every option is on ``source``'s allow-list with valid values; else one
    ConfigError line naming ``where`` (the file), cg.sender_args, the word and the options."""
    allowed = SENDER_OPTIONS.get(source)
    if allowed is None:
        raise ConfigError(f"{where}: key cg.sender_args: source {source} takes no sender options")

    def refuse(i: int, why: str) -> ConfigError:
        return ConfigError(
            f"{where}: key cg.sender_args[{i}]: {_shown(words[i])} {why} "
            f"(options of {source}: {', '.join(allowed)}; docs/cg.md)"
        )

    i = 0
    while i < len(words):
        word = words[i]
        if "=" in word and word.split("=", 1)[0] in allowed:
            raise refuse(i, "is not allowed: give the option and its value as two words")
        values = allowed.get(word)
        if values is None:
            raise refuse(i, "is not an option allowed here")
        for n, value in enumerate(values, 1):
            if i + n >= len(words):
                raise refuse(i, f"needs {len(values)} value(s): {value.describe()}")
            if not value.accepts(words[i + n]):
                raise refuse(i + n, f"is not a value of {word}: give {value.describe()}")
        i += 1 + len(values)
    return tuple(words)

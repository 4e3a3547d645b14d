"""The video encoders a run may put behind its CG sender (``cg.encoder``): one place for
their settings, which cga-cg's encoder model (native/cg/src/encoder.rs) and our game
server for eCGP's proxy (ecgp_game.py) both take.

Three encoders bracket what the papers' NVENC may have done (docs/cg.md, "Encoders"):

- ``model``: our cloud-gaming model, cga-cg's defaults: frame sizes varying 10 %
  (log-normal), the rate following a new target with a 100 ms first-order lag, an
  I-frame after a loss four times a P-frame (its excess repaid over the next frames);
- ``constant``: frames of exactly target/fps at once, no larger I-frames: what Ericsson's
  test program (scream_bw_test_tx) sends;
- ``cbr``: NVENC in CBR with ultra-low-latency tuning, as eCGP ran it: a VBV of one frame
  keeps every frame within a few per cent of target/fps (CV 0.03) and an I-frame no
  larger than a P-frame (it must fit that VBV); a new target takes effect at the next
  frame (one frame of lag at 60 fps).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Encoder:
    """Settings of the frame-size model (the same three knobs in both implementations)."""

    name: str
    frame_size_cv: float
    lag_ms: float
    keyframe_factor: float
    summary: str

    def cga_cg_args(self) -> list[str]:
        """`cga-cg send` options."""
        return [
            "--frame-size-cv",
            f"{self.frame_size_cv:g}",
            "--encoder-lag-ms",
            f"{self.lag_ms:g}",
            "--keyframe-factor",
            f"{self.keyframe_factor:g}",
        ]

    def game_args(self) -> list[str]:
        """Options of our game server for eCGP's proxy (ecgp_game.py)."""
        return [
            "--size-cv",
            f"{self.frame_size_cv:g}",
            "--lag-ms",
            f"{self.lag_ms:g}",
            "--keyframe-factor",
            f"{self.keyframe_factor:g}",
        ]

    def to_dict(self) -> dict[str, float | str]:
        return {
            "name": self.name,
            "frame_size_cv": self.frame_size_cv,
            "lag_ms": self.lag_ms,
            "keyframe_factor": self.keyframe_factor,
        }


ENCODERS: dict[str, Encoder] = {
    e.name: e
    for e in (
        Encoder("model", 0.1, 100.0, 4.0, "frame sizes varying 10 %, 100 ms lag, 4x I-frames"),
        Encoder("constant", 0.0, 0.0, 1.0, "frames of exactly target/fps, no lag"),
        Encoder(
            "cbr", 0.03, 1000.0 / 60.0, 1.0, "one-frame VBV: sizes within ~3 %, one frame of lag"
        ),
    )
}

#: What cga-cg and our game server do when a run names no encoder.
DEFAULT_ENCODER = "model"

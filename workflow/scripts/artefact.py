"""Snakemake rules ``table`` and ``figure``: one of the papers' tables or figures, by its
registry name (``params.artefact``; cganalysis.report.artefacts holds the recipe)."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.artefacts import write_from_files

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    write_from_files(
        snakemake.params.artefact,
        [Path(p) for p in snakemake.input.metrics],
        Path(snakemake.input.style),
        Path(snakemake.output[0]).with_suffix(""),
        [Path(p) for p in snakemake.input.get("timeseries", [])],
    )

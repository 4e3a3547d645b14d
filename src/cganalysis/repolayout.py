"""Folders of the repository the package reads by default, named once for every layer (the
analysis renders from them, the dataset tools write them)."""

from __future__ import annotations

#: The repository folder that holds the published datasets.
DATASETS_DIR = "datasets"

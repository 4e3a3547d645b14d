"""Publication datasets of a campaign (``cganalysis dataset export``; docs/datasets.md)."""

from cganalysis.dataset.export import ExportSummary, export_campaign

__all__ = ["ExportSummary", "export_campaign"]

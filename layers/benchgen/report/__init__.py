"""Human-readable reports of a scored run."""

from benchgen.report.detailed import write_detailed_results

__all__ = ["write_detailed_results"]

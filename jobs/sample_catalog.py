"""Moved to devtools/sample_catalog/ (a developer tool, not orchestration). This name stays for callers outside
the packages that still import it here; the import guard lets a shim import only its new home and lets nothing
in the packages import a shim."""

from devtools.sample_catalog import Truth, load_truth, write_sample_catalog

__all__ = ["Truth", "load_truth", "write_sample_catalog"]

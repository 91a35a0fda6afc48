"""The ledger as the dispatcher leaves it."""

from __future__ import annotations

from jobs.ledger import Ledger


def index_results(ledger: Ledger, job_id: str) -> None:
    """Take a job's settled results out of its stream, as the dispatcher does once it has indexed them: a job
    completes only when none are left."""
    results = ledger.read_results(job_id, count=10_000)
    if results:
        ledger.trim_results(job_id, results[-1][0])

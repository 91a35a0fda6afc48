"""The job ledger in Redis: records (records.py), key layout (keys.py), Lua scripts (lua/, scripts.py) and the
store every other module goes through (store.py). These names are what the rest of reelgen imports."""

from jobs.ledger.records import (
    QUEUED,
    Failure,
    ItemState,
    JobAction,
    JobKind,
    JobRecord,
    JobState,
    Reprocess,
)
from jobs.ledger.store import Ledger

__all__ = [
    "QUEUED",
    "Failure",
    "ItemState",
    "JobAction",
    "JobKind",
    "JobRecord",
    "JobState",
    "Ledger",
    "Reprocess",
]

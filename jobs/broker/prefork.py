"""The Celery worker's parent process, just before it forks a pool child.

Everything the parent holds by then (Celery, the task modules, cv2, PyAV, numpy, pydantic) lives as long as the
worker. Moved to the garbage collector's permanent generation, it is never walked again: not by the parent's
last collection at exit (walking it is about a third of an idle worker's time from SIGTERM to exit), and not by
the children's full collections, which would otherwise touch the reference counts of every inherited object and so
copy those pages into each child (the copy-on-write sharing Python's `gc.freeze` documentation describes; the
pages it saves are few beside the children's own frames and encoders, which dominate their memory).
"""

from __future__ import annotations

import gc
from typing import Any

from celery.signals import worker_before_create_process


@worker_before_create_process.connect
def freeze_before_fork(**_: Any) -> None:
    gc.collect()  # garbage frozen now would never be freed
    gc.freeze()

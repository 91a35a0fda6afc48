"""The broker's layout and the task names, defined once and without the Celery app: the app configures itself
from them (jobs/broker/celery_app.py), the feed and the tasks publish with them, the exporter reads the queues by them.

Task names and the queue are part of what queued messages hold: renaming one strands the work already queued.
"""

from __future__ import annotations

QUEUE = "reelgen"
# Redis-transport priorities: 0 is served first. Later stages outrank first stages so that items already under
# way finish before new ones start (the seed's first-come-first-served, inside the broker).
PRIORITY_PREPARE = 6
PRIORITY_SAMPLE = 4
PRIORITY_SELECT = 2
PRIORITY_RENDER = 0
#: kombu's priority steps and its separator: the priority-p list is "<queue><sep><p>", priority 0 plain "<queue>"
PRIORITIES = tuple(range(10))
SEP = ":"
#: kombu's Redis hash of delivered, unacknowledged messages
UNACKED_KEY = "unacked"

#: the modules whose tasks a worker registers (the Celery app's include list)
TASK_MODULES = ("workers.tasks", "jobs.schedule")
PREPARE_TASK = "reelgen.prepare"
SAMPLE_TASK = "reelgen.sample_segment"
SELECT_TASK = "reelgen.select"
RENDER_TASK = "reelgen.render"
NIGHTLY_TASK = "reelgen.nightly"


def queue_keys(
    queue: str = QUEUE, priorities: tuple[int, ...] = PRIORITIES, sep: str = SEP
) -> dict[int, str]:
    """{priority: Redis list name} as kombu's Redis transport names them."""
    return {p: f"{queue}{sep}{p}" if p else queue for p in priorities}


def message_item(name: str, args: object) -> tuple[str, str, int] | None:
    """(job id, item id, dispatch token) of a stage message: prepare's args are (job id, item id, token), every
    later stage's first argument is the item's state, which carries them; None for another task, or a message
    published before messages carried a token."""
    if not isinstance(args, list | tuple) or not args:
        return None
    if name == PREPARE_TASK and len(args) >= 3:
        job_id, item, token = args[0], args[1], args[2]
    elif name in (SAMPLE_TASK, SELECT_TASK, RENDER_TASK) and isinstance(args[0], dict):
        job_id, item, token = args[0].get("job_id"), args[0].get("item_id"), args[0].get("token")
    else:
        return None
    if isinstance(job_id, str) and isinstance(item, str) and isinstance(token, int):
        return job_id, item, token
    return None

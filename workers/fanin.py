"""Joining an item's parallel segment results without a Celery result backend.

Each segment task stores its result under the key of the item's dispatch (a superseded attempt's late results
never join a newer one's); the one whose store completes the set is told so,
exactly once, even when a segment is delivered twice. The key lives only while the item is being analysed.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from jobs.ledger.keys import JobKeys

TTL_S = 24 * 3600

# KEYS[1]=results hash; ARGV[1]=segment index, ARGV[2]=result json, ARGV[3]=segment count, ARGV[4]=ttl.
# Returns 1 to the single caller whose new result completes the set.
_STORE = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
if redis.call('HLEN', KEYS[1]) == tonumber(ARGV[3]) then return 1 end
return 0
"""


class SegmentResults:
    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._store = client.register_script(_STORE)

    @staticmethod
    def _key(job_id: str, item_id: str, token: int | None) -> str:
        return JobKeys.of(job_id).segments(item_id, token)

    def reset(self, job_id: str, item_id: str, token: int | None) -> None:
        """Forget results of an earlier delivery of this dispatch."""
        self.redis.delete(self._key(job_id, item_id, token))

    def store(
        self, job_id: str, item_id: str, token: int | None, index: int, count: int, result: dict[str, Any]
    ) -> bool:
        """Keep one segment's result; True for the call that completes all `count` segments."""
        args: list[str | int] = [index, json.dumps(result), count, TTL_S]
        return bool(self._store(keys=[self._key(job_id, item_id, token)], args=args))

    def collect(self, job_id: str, item_id: str, token: int | None) -> list[dict[str, Any]]:
        """Every segment's result in segment order."""
        raw = self.redis.hgetall(self._key(job_id, item_id, token))
        return [json.loads(raw[k]) for k in sorted(raw, key=int)]

    def clear(self, job_id: str, item_id: str, token: int | None) -> None:
        self.redis.delete(self._key(job_id, item_id, token))

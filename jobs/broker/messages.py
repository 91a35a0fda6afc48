"""The broker's stage messages, read as the items they carry: those waiting in its queues, and those handed to a
worker and not yet acknowledged. Kombu's Redis transport keeps a waiting message in its priority's list (as
published) and a delivered one in one hash (UNACKED_KEY) from delivery until the worker acknowledges it, or until
its visibility timeout puts it back on its queue (the entry is the message with its exchange and routing key)."""

from __future__ import annotations

import base64
import binascii
import json

import redis

from jobs.broker.queues import UNACKED_KEY, message_item, queue_keys

Message = tuple[str, str, int, str]


def unacknowledged(client: redis.Redis) -> list[Message]:
    """(job id, item id, dispatch token, task id) of every unacknowledged stage message; entries that are no
    stage message of ours, or unreadable, are left out."""
    return _stage_messages(client.hvals(UNACKED_KEY), delivered=True)  # type: ignore[arg-type]


def waiting(client: redis.Redis) -> list[Message]:
    """The same of every stage message waiting in the queues."""
    with client.pipeline(transaction=False) as pipe:
        for key in queue_keys().values():
            pipe.lrange(key, 0, -1)
        lists = pipe.execute()
    return _stage_messages([raw for entries in lists for raw in entries], delivered=False)


def _stage_messages(entries: list[bytes | str], delivered: bool) -> list[Message]:
    found = []
    for raw in entries:
        message = _stage_message(raw, delivered)
        if message is not None:
            found.append(message)
    return found


def _stage_message(raw: bytes | str, delivered: bool) -> Message | None:
    try:
        payload = json.loads(raw)
        payload = payload[0] if delivered else payload
        headers = payload.get("headers") or {}
        body = payload["body"]
        if (payload.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, binascii.Error):
        return None
    item = message_item(str(headers.get("task", "")), args)
    return None if item is None else (*item, str(headers.get("id", "")))

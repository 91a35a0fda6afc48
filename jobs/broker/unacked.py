"""The broker's unacknowledged messages: those handed to a worker and not yet acknowledged. Kombu's Redis
transport keeps each in one hash (UNACKED_KEY) from delivery until the worker acknowledges it, or until its
visibility timeout puts it back on its queue; the entry is the message as published, with its exchange and
routing key."""

from __future__ import annotations

import base64
import binascii
import json

import redis

from jobs.broker.queues import UNACKED_KEY, message_item


def unacknowledged(client: redis.Redis) -> list[tuple[str, str, int, str]]:
    """(job id, item id, dispatch token, task id) of every unacknowledged stage message; entries that are no
    stage message of ours, or unreadable, are left out."""
    found = []
    for raw in client.hvals(UNACKED_KEY):  # type: ignore[union-attr]
        message = _stage_message(raw)
        if message is not None:
            found.append(message)
    return found


def _stage_message(raw: bytes | str) -> tuple[str, str, int, str] | None:
    try:
        payload = json.loads(raw)[0]
        headers = payload.get("headers") or {}
        body = payload["body"]
        if (payload.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, binascii.Error):
        return None
    item = message_item(str(headers.get("task", "")), args)
    return None if item is None else (*item, str(headers.get("id", "")))

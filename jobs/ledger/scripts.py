"""The ledger's Lua scripts, read from jobs/ledger/lua/ (shipped as package data) and registered on a client.

Every item transition is one script, so it is atomic. Three of them (begin, settle, reap) settle an item, and
take in the one shared body with a `-- @settle_body(<nothing to settle>, <settled>)` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

import redis
from redis.commands.core import Script

_INCLUDE = re.compile(r"^-- @settle_body\((\S+), (\S+)\)$", re.M)


def _read(name: str) -> str:
    return (files("jobs.ledger") / "lua" / f"{name}.lua").read_text(encoding="utf-8")


@cache
def source(name: str) -> str:
    """A script's Lua with the shared settle body in place of its include line."""
    body = "\n".join(line for line in _read("settle_body").splitlines() if not line.startswith("--"))
    return _INCLUDE.sub(
        lambda m: body.replace("RET_NONE", m.group(1)).replace("RET_DONE", m.group(2)), _read(name)
    )


@dataclass(frozen=True)
class Scripts:
    """Every script, registered on one client (redis-py runs them by digest and loads them when missing)."""

    admit: Script
    skip: Script
    fail_line: Script
    start: Script
    begin: Script
    end: Script
    settle: Script
    reap: Script
    republish: Script
    control: Script
    complete: Script
    claim: Script
    feed_failed: Script
    beat: Script
    lost: Script
    forget: Script
    share_lead: Script
    share_done: Script
    share_release: Script

    @classmethod
    def register(cls, client: redis.Redis) -> Scripts:
        return cls(**{name: client.register_script(source(name)) for name in cls.__dataclass_fields__})

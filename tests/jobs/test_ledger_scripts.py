"""The ledger's Lua scripts as shipped: every file is a script the store registers (or the shared body), and
each include line was replaced by the body."""

from __future__ import annotations

from importlib.resources import files

from jobs.ledger.scripts import Scripts, source


def test_every_lua_file_is_registered_and_every_include_resolved() -> None:
    shipped = {
        p.name.removesuffix(".lua")
        for p in (files("jobs.ledger") / "lua").iterdir()
        if p.name.endswith(".lua")
    }
    assert shipped - {"settle_body"} == set(Scripts.__dataclass_fields__)
    for name in Scripts.__dataclass_fields__:
        text = source(name)
        assert "@settle_body" not in text and "RET_NONE" not in text and "RET_DONE" not in text, name
    assert source("settle").count("XADD") == 1 and source("begin").count("WorkerLost") == 1

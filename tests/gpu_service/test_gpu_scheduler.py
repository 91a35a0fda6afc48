"""Pure logic of the inference service: scheduling order, batch limits, slot leases, messages, settings."""

from __future__ import annotations

import random
import socket

import pytest
from pydantic import ValidationError

from core.daemon_settings import DaemonSettings
from gpu_service import protocol
from gpu_service.priority import PriorityKey
from gpu_service.scheduler import Batch, Pending, Scheduler, bucket_for
from gpu_service.shm import Grant, SlotError, SlotPool, SlotState


def req(
    job: float,
    item: float,
    frames: int = 1,
    group: str = "m",
    owner: int = 1,
    at: float = 0.0,
    name: str = "",
) -> Pending[str]:
    return Pending(PriorityKey(job, item), frames, group, owner, at, name)


def served(s: Scheduler[str], now: float = 1e9) -> list[Batch[str]]:
    out = []
    while (b := s.take(now)) is not None:
        out.append(b)
    return out


def names(batches: list[Batch[str]]) -> list[str]:
    return [r.payload for b in batches for r in b.requests]


def test_earlier_keys_are_served_first_then_arrival() -> None:
    s: Scheduler[str] = Scheduler(max_batch=1, max_delay_s=0.0, buckets=(1,))
    for job, item, name in [(3, 1, "c"), (1, 5, "b1"), (2, 0, "x"), (1, 2, "a"), (1, 5, "b2")]:
        s.push(req(job, item, name=name))
    assert names(served(s)) == ["a", "b1", "b2", "x", "c"]


def test_an_items_later_request_overtakes_items_that_started_after_it() -> None:
    s: Scheduler[str] = Scheduler(max_batch=1, max_delay_s=0.0, buckets=(1,))
    # Item A's first request was at t=10, item B's at t=20 (same job). A's second request arrives last.
    s.push(req(100, 20, name="B-1"))
    s.push(req(100, 20, name="B-2"))
    s.push(req(100, 10, name="A-2"))
    s.push(req(99, 50, name="older-job"))
    assert names(served(s)) == ["older-job", "A-2", "B-1", "B-2"]


def test_batches_never_exceed_max_batch_never_split_requests_and_fit_a_bucket() -> None:
    rng = random.Random(7)
    buckets = (1, 2, 4, 8, 16)
    s: Scheduler[str] = Scheduler(max_batch=16, max_delay_s=0.0, buckets=buckets)
    pushed = []
    for i in range(500):
        r = req(
            rng.randint(0, 5),
            rng.randint(0, 5),
            frames=rng.randint(1, 16),
            group=rng.choice("ab"),
            name=str(i),
        )
        s.push(r)
        pushed.append(r)
        if rng.random() < 0.3:
            for b in served(s):
                assert 1 <= b.frames <= 16
                assert b.frames == sum(r.frames for r in b.requests)
                assert b.bucket in buckets and b.bucket >= b.frames
                assert len({r.group for r in b.requests}) == 1
    rest = served(s)
    assert all(b.frames <= 16 for b in rest)
    assert len(s) == 0


def test_order_within_batches_is_strict_prefix() -> None:
    s: Scheduler[str] = Scheduler(max_batch=8, max_delay_s=0.0, buckets=(1, 2, 4, 8))
    s.push(req(1, 1, frames=3, group="a", name="a1"))
    s.push(req(1, 2, frames=3, group="b", name="b1"))
    s.push(req(1, 3, frames=3, group="a", name="a2"))
    batches = served(s)
    # a2 could share a1's batch, but that would serve it before the earlier-keyed b1.
    assert [[r.payload for r in b.requests] for b in batches] == [["a1"], ["b1"], ["a2"]]


def test_batch_waits_for_company_until_the_delay_unless_closed() -> None:
    s: Scheduler[str] = Scheduler(max_batch=4, max_delay_s=0.010, buckets=(1, 2, 4))
    s.push(req(1, 1, frames=1, at=100.0, name="a"))
    assert s.take(100.005) is None
    assert s.ready_at() == pytest.approx(100.010)
    s.push(req(1, 2, frames=2, at=100.006, name="b"))
    assert s.take(100.007) is None
    b = s.take(100.0101)
    assert b is not None and [r.payload for r in b.requests] == ["a", "b"] and b.bucket == 4
    s.push(req(1, 1, frames=4, at=200.0, name="full"))
    assert s.take(200.0) is not None, "a full batch goes at once"
    s.push(req(1, 1, frames=1, at=250.0, name="alone"))
    assert s.take(250.0) is None
    forced = s.take(250.0, force=True)  # the daemon knows no other request can come
    assert forced is not None and forced.frames == 1
    s.push(req(1, 1, frames=3, group="x", at=300.0, name="x"))
    s.push(req(1, 2, frames=3, group="x", at=300.0, name="y"))
    closed = s.take(300.0)
    assert closed is not None and closed.frames == 3, "a batch the next request cannot join goes at once"


def test_requests_outside_one_to_max_batch_are_refused_and_buckets_fall_back() -> None:
    s: Scheduler[str] = Scheduler(max_batch=8, max_delay_s=0.0, buckets=(1, 2, 4))
    with pytest.raises(ValueError):
        s.push(req(1, 1, frames=9))
    with pytest.raises(ValueError):
        s.push(req(1, 1, frames=0))
    assert bucket_for(3, (1, 2, 4)) == 4
    assert bucket_for(6, (1, 2, 4)) == 6


def test_cancel_removes_only_that_owners_requests() -> None:
    s: Scheduler[str] = Scheduler(max_batch=1, max_delay_s=0.0, buckets=(1,))
    s.push(req(1, 1, owner=1, name="a"))
    s.push(req(1, 2, owner=2, name="b"))
    s.push(req(1, 3, owner=1, name="c"))
    assert sorted(r.payload for r in s.cancel(1)) == ["a", "c"]
    assert names(served(s)) == ["b"]


def test_priority_key_must_be_finite() -> None:
    with pytest.raises(ValueError):
        PriorityKey(float("nan"), 0.0)


def test_full_pool_queues_leases_and_grants_them_in_key_order() -> None:
    pool = SlotPool(2)
    a = pool.lease(owner=1, request_id=1, key=(0, 0))
    b = pool.lease(owner=1, request_id=2, key=(0, 0))
    assert a is not None and b is not None and pool.in_use == 2
    assert pool.lease(owner=2, request_id=10, key=(5, 5)) is None
    assert pool.lease(owner=3, request_id=11, key=(1, 1)) is None
    assert pool.waiting == 2
    grants = pool.release(a.slot)
    assert [(g.owner, g.request_id) for g in grants] == [(3, 11)]


def test_reclaim_frees_everything_but_running_slots_which_free_when_done() -> None:
    pool = SlotPool(3)
    slots = [pool.lease(owner=1, request_id=i, key=(0, 0)) for i in range(3)]
    assert all(s is not None for s in slots)
    s0, s1, s2 = (g.slot for g in slots if g is not None)
    pool.move(s1, 1, SlotState.LEASED, SlotState.QUEUED)
    pool.move(s2, 1, SlotState.LEASED, SlotState.QUEUED)
    pool.move(s2, 1, SlotState.QUEUED, SlotState.RUNNING)
    assert pool.lease(owner=2, request_id=9, key=(0, 0)) is None
    grants = pool.reclaim(owner=1)
    assert [g.owner for g in grants] == [2]
    assert pool.in_use == 2  # owner 2's new lease and the running slot
    assert pool.finish(s2) == [] and pool.state(s2) == SlotState.FREE
    assert pool.in_use == 1
    with pytest.raises(SlotError):
        pool.move(s0, 1, SlotState.LEASED, SlotState.QUEUED)


def test_keeping_a_slot_never_takes_the_last_spare_or_a_waiters_slot() -> None:
    pool = SlotPool(4)  # reserve 1
    leases = [pool.lease(owner=i, request_id=i, key=(0, 0)) for i in range(3)]
    for g in leases:
        assert g is not None
        pool.move(g.slot, g.owner, SlotState.LEASED, SlotState.DONE)
    assert pool.keep(leases[0].slot)  # type: ignore[union-attr]
    last = pool.lease(owner=9, request_id=9, key=(0, 0))
    assert last is not None
    assert not pool.keep(leases[1].slot)  # type: ignore[union-attr]  # no spare slot would remain
    pool.release(leases[1].slot)  # type: ignore[union-attr]
    assert pool.lease(owner=7, request_id=7, key=(0, 0)) is not None
    assert pool.lease(owner=8, request_id=8, key=(0, 0)) is None  # a waiter now exists
    assert not pool.keep(leases[2].slot)  # type: ignore[union-attr]


def test_only_the_owner_gives_back_a_slot_and_only_while_it_is_idle() -> None:
    pool = SlotPool(3)
    a, b = pool.lease(owner=1, request_id=1, key=(0, 0)), pool.lease(owner=1, request_id=2, key=(0, 0))
    assert a is not None and b is not None
    with pytest.raises(SlotError):
        pool.give_back(a.slot, owner=2)  # not its slot
    pool.move(b.slot, 1, SlotState.LEASED, SlotState.QUEUED)
    with pytest.raises(SlotError):
        pool.give_back(b.slot, owner=1)  # queued for the device: not the client's to free
    assert pool.lease(owner=3, request_id=3, key=(0, 0)) is not None
    waiting = pool.lease(owner=4, request_id=4, key=(0, 0))
    assert waiting is None
    assert pool.give_back(a.slot, owner=1) == [Grant(4, 4, a.slot)]  # a kept (leased) slot goes to the waiter
    pool.move(b.slot, 1, SlotState.QUEUED, SlotState.RUNNING)
    assert pool.finish(b.slot) == [] and not pool.keep(b.slot)  # nobody may keep the last spare
    assert pool.give_back(b.slot, owner=1) == [] and pool.state(b.slot) == SlotState.FREE
    with pytest.raises(SlotError):
        pool.give_back(7, owner=1)


def test_messages_round_trip_and_bad_ones_are_named() -> None:
    a, b = socket.socketpair()
    with a, b:
        protocol.send(a, {"op": "ping", "id": 3})
        assert protocol.recv(b) == {"op": "ping", "id": 3}
        a.sendall(b"\x00\x00\x00\x02[]")
        body = protocol.recv_raw(b)
        assert body is not None
        with pytest.raises(protocol.ProtocolError):
            protocol.parse_request(body)
        a.sendall(b"\xff\xff\xff\xff")
        with pytest.raises(protocol.FramingError):
            protocol.recv_raw(b)
    for bad in [
        b"{",
        b'{"op":"lease","id":1,"key":[0,NaN]}',
        b'{"op":"infer","id":4,"slot":0}',
        b'{"op":"ping","id":1,"extra":2}',
        b'{"op":"release","slot":"0"}',
    ]:
        with pytest.raises(protocol.ProtocolError):
            protocol.parse_request(bad)
    assert protocol.request_id_of(b'{"op":"infer","id":4,"slot":0}') == 4


@pytest.mark.parametrize(
    "fields",
    [
        {"buckets": (4, 2)},
        {"buckets": ()},
        {"device": "tpu"},
        {"socket_path": "/tmp/" + "x" * 120},
        {"weights": {"clip_vit_b16_image": "/w.pt"}},
        {"pin_cores": (1, 1)},
        {"slots": 0},
    ],
)
def test_settings_refuse_invalid_values(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        DaemonSettings.model_validate(fields)


def test_settings_nest_and_round_trip_through_json() -> None:
    s = DaemonSettings(
        models=("echo_stats", "probe"), buckets=(1, 3), pin_cores=(0,), weights={"probe": "/p"}
    )
    assert DaemonSettings.model_validate_json(s.model_dump_json()) == s
    assert s.max_delay_s == pytest.approx(0.005)

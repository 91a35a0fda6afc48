"""Prometheus metrics: worker facts summed across real processes, cluster state read from a real Redis, all
checked by prometheus_client's own parser (and `promtool check metrics` where Debian's prometheus is installed)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery
from prometheus_client import CollectorRegistry, generate_latest
from pydantic import SecretStr

from core.settings import Settings
from gpu_service.metrics import DaemonMetrics
from jobs import cluster_metrics
from jobs.broker import celery_app, queues
from jobs.ledger import JobKind, Ledger
from jobs.local.redis_server import EmbeddedRedis
from monitoring import metrics
from monitoring.exporter import MetricsServer
from tests.support.ledger import index_results
from tests.support.metrics import samples

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "helm" / "reelgen" / "dashboards" / "reelgen.json"


def promtool_check(text: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        return  # the parser above already ran; promtool is the stricter linter where installed
    result = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    # promtool exits 1 on lint findings as well as on parse errors; both are failures here
    assert result.returncode == 0, result.stdout + result.stderr


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def test_queue_layout_matches_the_celery_broker_configuration() -> None:
    app = Celery("check")
    celery_app.configure(app, Settings(redis_url=SecretStr("redis://localhost:6379/0")))
    options = app.conf.broker_transport_options
    assert app.conf.task_default_queue == queues.QUEUE
    assert options["sep"] == queues.SEP
    assert list(queues.PRIORITIES) == list(options["priority_steps"])
    priorities = {v for k, v in vars(queues).items() if k.startswith("PRIORITY_")}
    assert len(priorities) == 4
    assert priorities <= set(queues.PRIORITIES)
    keys = queues.queue_keys()
    assert keys[0] == "reelgen" and keys[6] == "reelgen:6" and len(keys) == 10


def test_queue_names_are_the_lists_kombu_really_writes(redis_server: EmbeddedRedis) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    app = Celery("probe")
    celery_app.configure(app, Settings(redis_url=SecretStr(redis_server.url)))
    for priority in (0, 6, 6):
        app.send_task("reelgen.nothing", priority=priority)
    lengths = {p: client.llen(key) for p, key in queues.queue_keys().items()}
    assert lengths[0] == 1 and lengths[6] == 2 and sum(lengths.values()) == 3
    app.close()
    client.close()


_OBSERVER = textwrap.dedent(
    """
    import sys
    from monitoring.metrics import count_item, observe_stage
    for _ in range(int(sys.argv[1])):
        count_item("done")
        observe_stage("render", 4.0, cpu_s=7.5)
    count_item("failed", sys.argv[2])
    count_item("failed", "not a class name!")
    """
)


def test_worker_metrics_sum_over_processes(tmp_path: Path) -> None:
    samples_dir = tmp_path / "samples"
    (samples_dir / "stale.db").parent.mkdir()
    (samples_dir / "stale.db").write_bytes(b"left by a previous run")
    metrics.reset_multiproc_dir(samples_dir)
    assert list(samples_dir.iterdir()) == []
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(samples_dir), PYTHONPATH=str(ROOT))
    # two separate processes, as two prefork children are: each writes its own files
    for done, error in ((2, "UnreadableVideo"), (3, "ItemTimeout")):
        subprocess.run([sys.executable, "-c", _OBSERVER, str(done), error], env=env, check=True, timeout=60)
    server = MetricsServer(metrics.worker_registry(samples_dir), "127.0.0.1", 0)
    try:
        status, text = get(f"http://127.0.0.1:{server.port}/metrics")
    finally:
        server.close()
    assert status == 200
    got = samples(text)
    assert got[("reelgen_items_total", (("error", ""), ("outcome", "done")))] == 5
    assert got[("reelgen_items_total", (("error", "UnreadableVideo"), ("outcome", "failed")))] == 1
    assert got[("reelgen_items_total", (("error", "ItemTimeout"), ("outcome", "failed")))] == 1
    assert got[("reelgen_items_total", (("error", "Other"), ("outcome", "failed")))] == 2
    assert got[("reelgen_stage_seconds_count", (("stage", "render"),))] == 5
    assert got[("reelgen_stage_seconds_sum", (("stage", "render"),))] == pytest.approx(20.0)
    assert got[("reelgen_stage_seconds_bucket", (("le", "2.5"), ("stage", "render")))] == 0
    assert got[("reelgen_stage_seconds_bucket", (("le", "5.0"), ("stage", "render")))] == 5
    assert got[("reelgen_stage_cpu_seconds_total", (("stage", "render"),))] == pytest.approx(37.5)
    promtool_check(text)


def test_count_item_rejects_an_unknown_outcome() -> None:
    with pytest.raises(ValueError, match="outcome"):
        metrics.count_item("lost")  # type: ignore[arg-type]


@pytest.fixture
def exporter(redis_server: EmbeddedRedis) -> Iterator[tuple[MetricsServer, Ledger]]:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    server = cluster_metrics.serve_metrics(
        0, Settings(redis_url=SecretStr(redis_server.url)), host="127.0.0.1"
    )
    yield server, Ledger(client)
    server.close()
    client.close()


def test_exporter_reports_queue_depth_and_job_progress_from_redis(
    exporter: tuple[MetricsServer, Ledger],
) -> None:
    server, ledger = exporter
    client = ledger.redis
    client.rpush("reelgen", "m1", "m2")  # priority 0 (render)
    client.rpush("reelgen:6", "m3", "m4", "m5")  # priority 6 (prepare)
    client.hset("unacked", "tag-1", "{}")
    job = ledger.create_job(
        kind=JobKind.BACKFILL, catalog="c.jsonl", out="s3://b/o", config_hash="h", config={}, total=6
    )
    for item in ("a", "b", "c", "d"):
        assert ledger.admit(job.id, item, {"item_id": item})
    assert ledger.finish(job.id, "a")
    assert ledger.fail(job.id, "b", "UnreadableVideo", "truncated file")
    assert ledger.count_skipped(job.id)
    old = ledger.create_job(kind=JobKind.NIGHTLY, catalog="n.jsonl", out="o", config_hash="h", config={})
    ledger.admit(old.id, "z", {"item_id": "z"})
    ledger.finish(old.id, "z")
    ledger.mark_exhausted(old.id)
    index_results(ledger, old.id)
    assert ledger.finish_if_drained(old.id) is not None

    status, text = get(f"http://127.0.0.1:{server.port}/metrics")
    assert status == 200
    got = samples(text)
    assert got[("reelgen_redis_up", ())] == 1
    assert got[("reelgen_queue_messages", (("priority", "0"), ("queue", "reelgen")))] == 2
    assert got[("reelgen_queue_messages", (("priority", "6"), ("queue", "reelgen")))] == 3
    assert got[("reelgen_queue_messages", (("priority", "3"), ("queue", "reelgen")))] == 0
    assert got[("reelgen_broker_unacked_messages", ())] == 1
    labels = (("job_id", job.id), ("kind", "backfill"))

    def counter(name: str) -> float:
        return got[("reelgen_job_items", (("counter", name), *labels))]

    assert (counter("dispatched"), counter("done"), counter("failed"), counter("skipped")) == (4, 1, 1, 1)
    assert got[("reelgen_job_catalog_items", labels)] == 6
    assert got[("reelgen_job_items_in_flight", labels)] == 2
    assert got[("reelgen_job_errors", (("error", "UnreadableVideo"), *labels))] == 1
    assert got[("reelgen_job_state", (*labels, ("state", "running")))] == 1
    assert got[("reelgen_job_state", (*labels, ("state", "completed")))] == 0
    assert got[("reelgen_job_catalog_exhausted", labels)] == 0
    assert got[("reelgen_job_submitted_timestamp_seconds", labels)] == pytest.approx(job.submitted_at)
    finished = (("job_id", old.id), ("kind", "nightly"))
    assert got[("reelgen_job_state", (*finished, ("state", "running")))] == 0
    assert got[("reelgen_job_catalog_exhausted", finished)] == 1
    assert got[("reelgen_items_in_flight", ())] == 2  # the finished job's items are not in flight
    promtool_check(text)

    assert get(f"http://127.0.0.1:{server.port}/healthz") == (200, "ok\n")


def test_exporter_says_unhealthy_when_redis_is_gone(tmp_path: Path) -> None:
    settings = Settings(redis_url=SecretStr(f"unix://{tmp_path / 'no-redis.sock'}"))
    server = cluster_metrics.serve_metrics(0, settings, host="127.0.0.1")
    try:
        status, body = get(f"http://127.0.0.1:{server.port}/healthz")
        assert status == 503 and "redis unreachable" in body
        status, text = get(f"http://127.0.0.1:{server.port}/metrics")
    finally:
        server.close()
    assert status == 200  # a scrape still answers, saying what it could not read
    got = samples(text)
    assert got[("reelgen_redis_up", ())] == 0
    assert not [name for name, _ in got if name.startswith("reelgen_queue")]


def daemon_text() -> str:
    daemon = DaemonMetrics("cuda:0")
    daemon.add_gpu_gauges(lambda: 0.5, lambda: 2.0**30, lambda: 16 * 2.0**30)
    daemon.batch_frames.observe(8)
    daemon.queue_wait.observe(0.002)
    daemon.compute.observe(0.01)
    daemon.requests["ok"].inc()
    return generate_latest(daemon.registry).decode()


def test_daemon_metrics_parse_and_pass_promtool() -> None:
    text = daemon_text()
    got = samples(text)
    assert got[("reelgen_gpu_utilization_ratio", (("device", "cuda:0"),))] == 0.5
    assert got[("reelgen_gpu_requests_total", (("device", "cuda:0"), ("outcome", "ok")))] == 1
    promtool_check(text)


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_every_series_the_dashboard_queries_is_exported(tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    # a worker's, the dispatcher's and a daemon's output together: what Prometheus would hold
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", _OBSERVER, "1", "InternalError"], env=env, check=True, timeout=60)
    worker_text = generate_latest(metrics.worker_registry(tmp_path)).decode()
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    ledger = Ledger(client)
    job = ledger.create_job(kind=JobKind.RUN, catalog="c", out="o", config_hash="h", config={}, total=1)
    ledger.admit(job.id, "x", {"item_id": "x"})
    ledger.fail(job.id, "x", "UnreadableVideo", "truncated")
    registry = CollectorRegistry()
    registry.register(cluster_metrics.ClusterCollector(client))
    cluster_text = generate_latest(registry).decode()
    client.close()
    exported = {name for text in (worker_text, cluster_text, daemon_text()) for name, _ in samples(text)}

    exprs = dashboard_exprs()
    assert len(exprs) >= 10
    referenced = {name for expr in exprs for name in re.findall(r"\breelgen_[a-z_]+", expr)}
    assert referenced, "the dashboard queries no reelgen series"
    assert sorted(referenced - exported) == []
    # and every family the exporters define is on the dashboard somewhere, so none is forgotten
    families = {re.sub(r"_(total|bucket|sum|count|created)$", "", n) for n in exported}
    shown = {re.sub(r"_(total|bucket|sum|count)$", "", n) for n in referenced}
    assert (
        sorted(families - shown - {"reelgen_gpu_queue_frames", "reelgen_job_submitted_timestamp_seconds"})
        == []
    )


def test_dashboard_panels_are_laid_out_on_the_grid() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and not math.isnan(grid["y"])
        for target in panel.get("targets", []):
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]


# Labels Prometheus sets on every scraped series itself: an exported label of the same name is renamed to
# exported_<name> by a scrape without honor_labels, and queries by it break.
TARGET_LABELS = {"job", "instance"}


def test_exported_labels_follow_conventions_and_match_the_dashboard(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", _OBSERVER, "1", "InternalError"], env=env, check=True, timeout=60)
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    ledger = Ledger(client)
    job = ledger.create_job(kind=JobKind.RUN, catalog="c", out="o", config_hash="h", config={}, total=1)
    ledger.admit(job.id, "x", {"item_id": "x"})
    ledger.fail(job.id, "x", "UnreadableVideo", "truncated")
    registry = CollectorRegistry()
    registry.register(cluster_metrics.ClusterCollector(client))
    texts = (generate_latest(metrics.worker_registry(tmp_path)).decode(), generate_latest(registry).decode())
    client.close()
    labels_of: dict[str, set[str]] = {}
    for text in (*texts, daemon_text()):
        for name, labels in samples(text):
            labels_of.setdefault(name, set()).update(label for label, _ in labels)
    collisions = {
        name: sorted(labels & TARGET_LABELS) for name, labels in labels_of.items() if labels & TARGET_LABELS
    }
    assert collisions == {}
    assert all(re.fullmatch(r"[a-z_][a-z0-9_]*", label) for labels in labels_of.values() for label in labels)
    assert ("reelgen_job_items", "job_id") in {(n, label) for n, ls in labels_of.items() for label in ls}

    # every label a panel groups, joins or names a legend by is one its series carry (or a target label)
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            carried = set(TARGET_LABELS)
            for name in re.findall(r"\breelgen_[a-z_]+", expr):
                carried |= labels_of[name] | ({"le"} if name.endswith("_bucket") else set())
            used = {
                label.strip()
                for group in re.findall(r"\b(?:by|on)\s*\(([^)]*)\)", expr)
                for label in group.split(",")
                if label.strip()
            }
            used |= set(re.findall(r"\{\{(\w+)\}\}", target.get("legendFormat", "")))
            used |= set(re.findall(r"[{,]\s*(\w+)\s*=~?", expr))
            assert used <= carried, (panel["title"], sorted(used - carried))

"""The chart's contract with the code it deploys, checked without a cluster.

The chart is rendered by a real Helm engine (helm-python-sdk) for the default, GPU and CPU-only values. Every
container of every pod is then started here as the kubelet would start it: the image's ENTRYPOINT and ENV (read
from its Dockerfile) with the container's command, args and rendered environment (Secrets resolved, $(VAR)
expanded), every path the pod mounts mapped to a folder of its own, against a real Redis with a password and S3
through moto's server on 127.0.0.1. Each declared probe (exec and HTTP) must pass, each declared port must
answer (/metrics parsed as Prometheus exposition, /healthz 200), every log line must be one JSON object, and
SIGTERM must stop each container cleanly within its pod's grace period. Native sidecars start first and must be
started (their startup probe passes) before the pod's containers start, as the kubelet orders them.

Pods behind Services (dispatcher, Flower) run together with the `helm test` pod, whose Service URLs are pointed
at them. A container whose rendered spec was already checked (the dispatcher is the same in all three value
sets) is not started again.

What a laptop cannot give: /dev/shm is the machine's own (POSIX shared memory ignores mounts), and a daemon
rendered for `--device cuda` runs with `--device cpu` where torch sees no CUDA device.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
import redis
import yaml
from moto.server import ThreadedMotoServer
from prometheus_client.parser import text_string_to_metric_families

from tests.support.helm import CHART, CPU_VALUES, GPU_VALUES, Obj, merge
from tests.support.net import free_port

helm = pytest.importorskip("helm_python")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DOCKERFILES = {"cpu": ROOT / "docker" / "cpu.Dockerfile", "gpu": ROOT / "docker" / "gpu.Dockerfile"}
# where an image installs reelgen's environment; this checkout's virtualenv stands in for it
IMAGE_VENV = "/opt/reelgen/bin"
# the longest a probe may take to pass once its container started (a cold daemon loads and warms its models)
PROBE_WAIT_S = 240.0
# the longest grace period waited for here; the chart's worker grace covers the longest task, not an idle stop
MAX_GRACE_S = 60.0
SCENARIOS = {"default": {}, "gpu": GPU_VALUES, "cpu": CPU_VALUES}
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


@dataclass
class Image:
    """What the kubelet takes from an image: its entrypoint, default args and environment."""

    entrypoint: list[str]
    cmd: list[str]
    env: dict[str, str]


def read_image(dockerfile: Path) -> Image:
    text = dockerfile.read_text().replace("\\\n", " ")
    final = text[text.rindex("\nFROM ") :]  # the last stage is the image
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", final, re.M):
        for assignment in shlex.split(line):
            name, _, value = assignment.partition("=")
            env[name] = value
    entrypoint = json.loads(re.findall(r"^ENTRYPOINT (.+)$", final, re.M)[-1])
    cmd = json.loads(re.findall(r"^CMD (.+)$", final, re.M)[-1])
    return Image(entrypoint, cmd, env)


@dataclass
class Local:
    """The real services the pods talk to, and the values that point the chart at them."""

    redis_url: str
    redis_password: str
    s3_endpoint: str
    values: dict[str, Any]


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    password = secrets.token_hex(12)
    port = free_port()
    data = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [str(BIN / "redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--requirepass", password,
         "--save", "", "--appendonly", "no", "--dir", str(data)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    s3.start()
    host, s3_port = s3.get_host_and_port()
    endpoint = f"http://{host}:{s3_port}"
    try:
        client = redis.Redis(port=port, password=password)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline and server.poll() is None, "redis-server did not start"
                time.sleep(0.1)
        store = boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="testing", aws_secret_access_key="testing",
        )  # fmt: skip
        for bucket in ("clips", "catalogs"):
            store.create_bucket(Bucket=bucket)
        # two items whose videos are missing: the dispatcher reads this through S3, the worker fails them named
        lines = [
            {"item_id": f"sku-{n}", "video": f"s3://catalogs/missing-{n}.mp4", "image": "s3://catalogs/x.jpg",
             "title": f"product {n}"}
            for n in range(2)
        ]  # fmt: skip
        body = "".join(json.dumps(line) + "\n" for line in lines).encode()
        store.put_object(Bucket="catalogs", Key="products.jsonl", Body=body)
        values = {
            "redis": {"host": "127.0.0.1", "port": port, "password": password},
            "s3": {"endpoint": endpoint, "region": "us-east-1", "accessKeyId": "testing",
                   "secretAccessKey": "testing"},
            "settings": {"out": "s3://clips/out", "taskTimeLimitSeconds": 60},
            "nightly": {"catalog": "s3://catalogs/products.jsonl"},
            "metrics": {"port": free_port()},
            "gpuDaemon": {"metricsPort": free_port()},
            "flower": {"port": free_port(), "auth": {"password": secrets.token_hex(8)}},
            "worker": {"cpusPerGpu": 2, "codecThreads": 1, "softShutdownSeconds": 10},
        }  # fmt: skip
        yield Local(f"redis://:{password}@127.0.0.1:{port}/0", password, endpoint, values)
    finally:
        s3.stop()
        server.terminate()
        server.wait(30)


def render(layers: dict[str, Any], local: Local) -> list[Obj]:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(merge(layers, local.values), name="rg", namespace="video")
    objects: list[Obj] = []
    for path, text in manifests.items():
        if path.endswith(".yaml"):
            objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


@dataclass
class Pod:
    """A pod spec laid out on this machine: a folder per volume, the image of each container."""

    name: str
    spec: Obj
    objects: list[Obj]
    root: Path
    folders: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for volume in self.spec.get("volumes", []):
            if volume.get("emptyDir", {}).get("medium") == "Memory":
                continue  # /dev/shm: shared memory is the machine's own
            folder = self.root / volume["name"]
            folder.mkdir(mode=0o700)
            self.folders[volume["name"]] = folder
        (self.root / "workdir").mkdir()

    def mapped(self, container: Obj) -> dict[str, str]:
        """{mount path: local folder}, longest first."""
        mounts = {
            m["mountPath"]: str(self.folders[m["name"]])
            for m in container.get("volumeMounts", [])
            if m["name"] in self.folders
        }
        return dict(sorted(mounts.items(), key=lambda item: -len(item[0])))

    def local_path(self, text: str, container: Obj) -> str:
        for mount, folder in self.mapped(container).items():
            if text == mount or text.startswith(mount.rstrip("/") + "/"):
                return folder + text[len(mount.rstrip("/")) :]
        return text

    def secret(self, name: str, key: str) -> str:
        for obj in self.objects:
            if obj["kind"] == "Secret" and obj["metadata"]["name"] == name:
                if key in obj.get("stringData", {}):
                    return str(obj["stringData"][key])
                return base64.b64decode(obj["data"][key]).decode()
        raise AssertionError(f"{self.name}: Secret {name} (key {key}) is not rendered by the chart")

    def image(self, container: Obj) -> Image:
        kind = "gpu" if "reelgen-gpu" in container["image"] else "cpu"
        return read_image(DOCKERFILES[kind])

    def environment(self, container: Obj) -> dict[str, str]:
        image = self.image(container)
        env = {
            "PATH": os.environ["PATH"],
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.folders.get("tmp", self.root)),
        }
        for name, value in image.env.items():
            env[name] = value.replace("$PATH", os.environ["PATH"]).replace(IMAGE_VENV, str(BIN))
        for variable in container.get("env", []):
            if "valueFrom" in variable:
                ref = variable["valueFrom"]["secretKeyRef"]
                value = self.secret(ref["name"], ref["key"])
            else:
                # Kubernetes expands $(NAME) from the variables defined before this one
                value = re.sub(
                    r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), str(variable.get("value", ""))
                )
            env[variable["name"]] = self.local_path(value, container)
        # boto3 reads no profile or config of the machine running the test
        env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = str(self.root / "no-aws-config")
        return env

    def argv(self, container: Obj, services: dict[str, str]) -> list[str]:
        image = self.image(container)
        # Kubernetes: command replaces the ENTRYPOINT, args the CMD (and a command alone drops the CMD)
        command: list[str] = container.get("command") or image.entrypoint
        args: list[str] = container.get("args", [] if "command" in container else image.cmd)
        argv = [self.local_path(str(a), container) for a in [*command, *args]]
        argv = [_service_urls(arg, services) for arg in argv]
        if "--device" in argv and argv[argv.index("--device") + 1].startswith("cuda") and not _cuda():
            argv[argv.index("--device") + 1] = "cpu"  # said in the report: "(--device cuda run as cpu)"
        return [_executable(argv[0]), *argv[1:]]


def _device_note(running: Running) -> str:
    rendered = [str(a) for a in running.container.get("args", [])]
    if "--device" in rendered and rendered[rendered.index("--device") + 1].startswith("cuda") and not _cuda():
        return " (--device cuda run as cpu: no CUDA device here)"
    return ""


def _executable(name: str) -> str:
    local = BIN / name
    assert local.exists(), f"{name}: the image's PATH has no such program here"
    return str(local)


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _service_urls(text: str, services: dict[str, str]) -> str:
    for address, local in services.items():
        text = text.replace(f"//{address}/", f"//{local}/")
    return text


@dataclass
class Running:
    pod: Pod
    container: Obj
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def where(self) -> str:
        return f"{self.pod.name}/{self.container['name']}"

    def alive(self) -> None:
        code = self.process.poll()
        assert code is None, f"{self.where} exited with {code}:\n{self.tail()}"

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def start(pod: Pod, container: Obj, services: dict[str, str]) -> Running:
    log = pod.root / f"{container['name']}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            pod.argv(container, services),
            env=pod.environment(container),
            cwd=pod.root / "workdir",
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Running(pod, container, process, log)


def http_get(url: str, auth: str | None = None, timeout: float = 10) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")


def port_number(container: Obj, port: str | int) -> int:
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    assert port in named, f"{container['name']}: probe port {port!r} is not a declared port"
    return int(named[port])


def run_probe(running: Running, probe: Obj) -> tuple[bool, str]:
    timeout = float(probe.get("timeoutSeconds", 1))
    if "exec" in probe:
        command = [running.pod.local_path(str(a), running.container) for a in probe["exec"]["command"]]
        result = subprocess.run(
            [_executable(command[0]), *command[1:]],
            env=running.pod.environment(running.container),
            cwd=running.pod.root / "workdir",
            capture_output=True,
            text=True,
            timeout=timeout
            + 30,  # a cold interpreter on a busy 2-core machine; the kubelet's clock is its own
        )
        return result.returncode == 0, result.stdout + result.stderr
    get = probe["httpGet"]
    url = f"http://127.0.0.1:{port_number(running.container, get['port'])}{get.get('path', '/')}"
    try:
        status, body = http_get(url, timeout=max(timeout, 5))
    except OSError as exc:
        return False, f"{url}: {exc}"
    return 200 <= status < 400, f"{url}: {status} {body[:200]}"


def wait_probe(running: Running, kind: str) -> str | None:
    """Wait until the container's probe of this kind passes; the probe's own output. None: not declared."""
    probe = running.container.get(kind)
    if probe is None:
        return None
    deadline = time.monotonic() + PROBE_WAIT_S
    while True:
        running.alive()
        ok, output = run_probe(running, probe)
        if ok:
            return output
        assert time.monotonic() < deadline, (
            f"{running.where}: {kind} never passed: {output}\n{running.tail()}"
        )
        time.sleep(1.0)


def check_ports(running: Running) -> list[str]:
    """Every declared port answers; what was hit."""
    hit = []
    for port in running.container.get("ports", []):
        number = port["containerPort"]
        if "metrics" in port["name"]:
            status, text = http_get(f"http://127.0.0.1:{number}/metrics")
            assert status == 200, f"{running.where}: /metrics on {number}: {status}"
            families = list(text_string_to_metric_families(text))
            health, _ = http_get(f"http://127.0.0.1:{number}/healthz")
            assert health == 200, f"{running.where}: /healthz on {number}: {health}"
            hit.append(f"{port['name']}:{number} /metrics ({len(families)} families) /healthz")
        else:
            hit.append(check_flower(running, number))
    return hit


def check_flower(running: Running, number: int) -> str:
    env = running.pod.environment(running.container)
    credentials = env["REELGEN_FLOWER__BASIC_AUTH"].split(",")[0]
    status, _ = http_get(f"http://127.0.0.1:{number}/")
    assert status == 401, f"{running.where}: Flower answers {status} without credentials"
    status, text = http_get(f"http://127.0.0.1:{number}/metrics", auth=credentials)
    assert status == 200, f"{running.where}: Flower /metrics: {status}"
    families = [f.name for f in text_string_to_metric_families(text)]
    assert any(name.startswith("flower_") for name in families), families
    return f"http:{number} / (401 without auth), /metrics with auth ({len(families)} families)"


def stop(running: Running, grace_s: float) -> None:
    if running.process.poll() is not None:
        return
    running.process.send_signal(signal.SIGTERM)
    try:
        code = running.process.wait(min(grace_s, MAX_GRACE_S))
    except subprocess.TimeoutExpired:
        os.killpg(running.process.pid, signal.SIGKILL)
        running.process.wait(10)
        raise AssertionError(
            f"{running.where}: still running {grace_s:.0f} s after SIGTERM\n{running.tail()}"
        ) from None
    assert code == 0, f"{running.where}: exit status {code} after SIGTERM\n{running.tail()}"


def kill(running: Running) -> None:
    if running.process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.process.pid, signal.SIGKILL)
        running.process.wait(10)


def json_lines(running: Running) -> list[dict[str, Any]]:
    records = []
    for line in running.log.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"{running.where}: a log line that is not JSON: {line[:300]!r}") from None
        assert isinstance(record, dict), line
        records.append(record)
    return records


def pods(objects: list[Obj], root: Path) -> list[Pod]:
    out = []
    for obj in objects:
        if obj["kind"] == "Deployment":
            spec = obj["spec"]["template"]["spec"]
        elif obj["kind"] == "Pod":
            spec = obj["spec"]
        else:
            continue
        folder = Path(tempfile.mkdtemp(prefix=obj["metadata"]["name"][-12:] + "-", dir=root))
        out.append(Pod(obj["metadata"]["name"], spec, objects, folder))
    return out


def service_addresses(objects: list[Obj]) -> dict[str, str]:
    """{"name:port" of each Service: "127.0.0.1:containerPort" of the pod port it targets}."""
    addresses = {}
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    for service in (o for o in objects if o["kind"] == "Service"):
        selector = service["spec"]["selector"].items()
        backing = [d for d in deployments if selector <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(backing) == 1, service["metadata"]["name"]
        spec = backing[0]["spec"]["template"]["spec"]
        ports = {p["name"]: p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            target = port["targetPort"]
            number = ports[target] if isinstance(target, str) else target
            addresses[f"{service['metadata']['name']}:{port['port']}"] = f"127.0.0.1:{number}"
    return addresses


#: container specs already started and checked, by their rendered JSON (the same in several value sets)
CHECKED: set[str] = set()


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)

    def add(self, running: Running, what: str) -> None:
        self.lines.append(f"{running.where}: {what}")


def run_pod(pod: Pod, services: dict[str, str], report: Report) -> list[Running]:
    """Start a pod's native sidecars (each started before the next), then its containers; check each."""
    started: list[Running] = []
    try:
        for container in pod.spec.get("initContainers", []):
            assert container.get("restartPolicy") == "Always", (
                f"{pod.name}: only native sidecars are expected"
            )
            running = start(pod, container, services)
            started.append(running)
            output = wait_probe(running, "startupProbe")
            report.add(running, f"startupProbe passed ({(output or '').strip()[:80]}){_device_note(running)}")
        for container in pod.spec["containers"]:
            started.append(start(pod, container, services))
        sidecars = len(pod.spec.get("initContainers", []))
        for at, running in enumerate(started):
            kinds = ("readinessProbe", "livenessProbe") if at < sidecars else PROBES
            for kind in kinds:
                output = wait_probe(running, kind)
                if output is not None:
                    report.add(running, f"{kind} passed ({output.strip()[:80]})")
            running.alive()
            for hit in check_ports(running):
                report.add(running, hit)
    except BaseException:
        for running in reversed(started):
            kill(running)
        raise
    return started


def stop_pod(pod: Pod, started: list[Running], report: Report) -> None:
    grace = float(pod.spec.get("terminationGracePeriodSeconds", 30))
    # the pod's containers first, then its sidecars in reverse order, as the kubelet stops them
    try:
        for running in reversed(started):
            began = time.monotonic()
            stop(running, grace)
            report.add(
                running, f"SIGTERM: exit 0 after {time.monotonic() - began:.1f} s (grace {grace:.0f} s)"
            )
            json_lines(running)
    finally:
        for running in started:
            kill(running)


def signature(pod: Pod) -> str:
    return json.dumps(pod.spec, sort_keys=True)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_container_answers_its_probes_and_ports(
    scenario: str, local: Local, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # a short root: a Unix socket path (the daemon's) must stay under 108 bytes
    root = Path(tempfile.mkdtemp(prefix="rgc-", dir="/tmp"))
    report = Report()
    try:
        objects = render(SCENARIOS[scenario], local)
        services = service_addresses(objects)
        laid_out = pods(objects, root)
        served = {p.name for p in laid_out if _backs_a_service(p, objects)}
        hooks = [p for p in laid_out if p.spec.get("restartPolicy") == "Never"]
        assert [p.name for p in hooks] == ["rg-reelgen-test-health"]
        fresh = [p for p in laid_out if p not in hooks and signature(p) not in CHECKED]

        # the Services' pods and the helm test pod that checks them through their Service addresses
        front = [p for p in fresh if p.name in served]
        running = [r for p in front for r in run_pod(p, services, report)]
        submitted = None
        try:
            if any(r.container["name"] == "dispatcher" for r in running):
                submitted = submit_backfill(local)
                wait_dispatched(submitted, running)
            if front:
                for hook in hooks:
                    check_helm_test(hook, services, report)
        finally:
            for pod in front:
                stop_pod(pod, [r for r in running if r.pod is pod], report)
        for pod in front:
            CHECKED.add(signature(pod))

        for pod in (p for p in fresh if p.name not in served):
            started = run_pod(pod, services, report)
            if submitted is not None and pod.name.endswith("worker"):
                wait_item_failures_logged(started)
                submitted = None
            stop_pod(pod, started, report)
            CHECKED.add(signature(pod))
        print(f"\n[{scenario}]\n" + "\n".join(report.lines))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _backs_a_service(pod: Pod, objects: list[Obj]) -> bool:
    for obj in objects:
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == pod.name:
            labels = obj["spec"]["template"]["metadata"]["labels"].items()
            return any(s["spec"]["selector"].items() <= labels for s in objects if s["kind"] == "Service")
    return False


def submit_backfill(local: Local) -> str:
    """A backfill of the S3 catalog, registered through the CLI with the services' Redis."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REELGEN_", "AWS_"))}
    env.update(
        REELGEN_REDIS_URL=local.redis_url, REELGEN_OUT="s3://clips/out", REELGEN_S3_ENDPOINT_URL=local.s3_endpoint,
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
        REELGEN_TASK_TIME_LIMIT_S="60",
    )  # fmt: skip
    result = subprocess.run(
        [str(BIN / "reelgen"), "backfill", "s3://catalogs/products.jsonl"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def wait_dispatched(job_id: str, running: list[Running]) -> None:
    """The dispatcher pod read the catalog from S3 with its own credentials and fed the broker."""
    dispatcher = next(r for r in running if r.container["name"] == "dispatcher")
    port = port_number(dispatcher.container, "metrics")
    deadline = time.monotonic() + 60
    while True:
        dispatcher.alive()
        _, text = http_get(f"http://127.0.0.1:{port}/metrics")
        got = {
            (s.name, s.labels.get("counter")): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.labels.get("job_id") == job_id
        }
        if got.get(("reelgen_job_items", "dispatched")) == 2:
            return
        assert time.monotonic() < deadline, (
            f"the dispatcher never fed job {job_id}: {got}\n{dispatcher.tail()}"
        )
        time.sleep(0.5)


def check_helm_test(hook: Pod, services: dict[str, str], report: Report) -> None:
    container = hook.spec["containers"][0]
    running = start(hook, container, services)
    try:
        code = running.process.wait(120)
    finally:
        kill(running)
    assert code == 0, f"helm test pod failed:\n{running.tail()}"
    report.add(running, f"helm test hook: exit 0 ({running.tail().strip()[:80]})")


def wait_item_failures_logged(started: list[Running]) -> None:
    """The worker took the backfill's items from the broker and failed each (its video is missing) in a JSON
    line naming the job and the item."""
    worker = next(r for r in started if r.container["name"] == "worker")
    deadline = time.monotonic() + 120
    while True:
        worker.alive()
        named = {r.get("item_id") for r in json_lines(worker) if r.get("job_id") and r.get("item_id")}
        if {"sku-0", "sku-1"} <= named:
            return
        assert time.monotonic() < deadline, f"no JSON line names the items: {named}\n{worker.tail()}"
        time.sleep(1.0)

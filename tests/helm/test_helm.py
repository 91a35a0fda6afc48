"""The Helm chart, linted and rendered by a real Helm engine (helm-python-sdk), asserted on the parsed objects."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.settings import Settings
from tests.support.helm import (
    CHART,
    CPU_VALUES,
    GPU_VALUES,
    REQUIRED,
    Obj,
    all_containers,
    containers,
    helm,
    merge,
    render,
)

DEFAULTS: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())


def one(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (
        f"{kind}/{name}: {len(found)} found among {[o['metadata']['name'] for o in objects]}"
    )
    return found[0]


def env(container: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in container.get("env", [])}


def mounts(container: Obj) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}


def volumes(deployment: Obj) -> dict[str, Obj]:
    return {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}


NIGHTLY: dict[str, Any] = {"nightly": {"catalog": "s3://catalogs/products.jsonl"}}


@pytest.fixture(scope="module")
def cpu() -> list[Obj]:
    return render(NIGHTLY)


@pytest.fixture(scope="module")
def gpu() -> list[Obj]:
    return render(GPU_VALUES, NIGHTLY)


@pytest.mark.parametrize("values", [{}, GPU_VALUES, CPU_VALUES], ids=["default", "gpu", "cpu"])
def test_chart_lints_without_warnings(values: dict[str, Any]) -> None:
    report = helm.lint(CHART, merge(REQUIRED, values), strict=True)
    assert report["errors"] == []
    # severity 2 = warning, 3 = error; "icon is recommended" (1, info) is fine
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_gpu_pod_runs_the_daemon_as_a_native_sidecar_beside_the_worker(gpu: list[Obj]) -> None:
    worker = one(gpu, "Deployment", "rg-reelgen-worker")
    spec = worker["spec"]["template"]["spec"]
    daemon = spec["initContainers"][0]
    assert daemon["name"] == "gpu-daemon" and daemon["restartPolicy"] == "Always"
    assert [c["name"] for c in spec["containers"]] == ["worker"]
    assert daemon["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert daemon["resources"]["requests"]["nvidia.com/gpu"] == 1
    assert "--device" in daemon["args"] and daemon["args"][daemon["args"].index("--device") + 1] == "cuda"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert worker["spec"]["replicas"] == GPU_VALUES["worker"]["replicas"]
    # no surge: a surge pod would wait for a GPU the old pods hold
    assert worker["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0


def test_worker_and_daemon_share_sized_shm_and_the_socket(gpu: list[Obj]) -> None:
    worker = one(gpu, "Deployment", "rg-reelgen-worker")
    parts = containers(worker)
    daemon, cpu_worker = parts["gpu-daemon"], parts["worker"]
    vols = volumes(worker)
    shm = vols["dshm"]["emptyDir"]
    pool_mib = GPU_VALUES["gpuDaemon"]["slots"] * GPU_VALUES["gpuDaemon"]["slotMiB"]
    assert shm["medium"] == "Memory"
    assert shm["sizeLimit"] == f"{pool_mib + DEFAULTS['gpuDaemon']['shmHeadroomMiB']}Mi"
    assert mounts(daemon)["dshm"] == mounts(cpu_worker)["dshm"] == "/dev/shm"
    assert "emptyDir" in vols["daemon-socket"]
    socket_dir = mounts(daemon)["daemon-socket"]
    assert mounts(cpu_worker)["daemon-socket"] == socket_dir
    socket_path = daemon["args"][daemon["args"].index("--socket") + 1]
    assert Path(socket_path).parent == Path(socket_dir)
    assert env(cpu_worker)["REELGEN_DAEMON__SOCKET_PATH"]["value"] == socket_path
    # the pool lives in tmpfs pages charged to the pod: the daemon's memory limit covers it
    assert int(daemon["resources"]["limits"]["memory"].removesuffix("Mi")) >= pool_mib + 256


def test_worker_cpu_budget_follows_cores_per_gpu_and_is_valid(gpu: list[Obj]) -> None:
    worker = containers(one(gpu, "Deployment", "rg-reelgen-worker"))["worker"]
    variables = env(worker)
    cores = GPU_VALUES["worker"]["cpusPerGpu"]
    assert worker["resources"]["requests"]["cpu"] == str(cores)
    assert worker["resources"]["limits"]["cpu"] == str(cores)
    assert variables["REELGEN_CPUS"]["value"] == str(cores)
    # the settings the pod gets must pass reelgen's own CPU-budget validation
    settings = Settings(
        cpus=int(variables["REELGEN_CPUS"]["value"]),
        workers=int(variables["REELGEN_WORKERS"]["value"]),
        codec_threads=int(variables["REELGEN_CODEC_THREADS"]["value"]),
    )
    assert settings.worker_count * settings.threads_per_worker == cores


def test_cores_per_gpu_value_resizes_the_pod() -> None:
    objects = render(GPU_VALUES, {"worker": {"cpusPerGpu": 12, "codecThreads": 2}})
    worker = containers(one(objects, "Deployment", "rg-reelgen-worker"))["worker"]
    assert worker["resources"]["requests"]["cpu"] == "12"
    assert env(worker)["REELGEN_WORKERS"]["value"] == "6"
    assert env(worker)["REELGEN_CODEC_THREADS"]["value"] == "2"


def test_probes_reflect_real_health(gpu: list[Obj]) -> None:
    worker = one(gpu, "Deployment", "rg-reelgen-worker")
    parts = containers(worker)
    daemon = parts["gpu-daemon"]
    socket_path = daemon["args"][daemon["args"].index("--socket") + 1]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        command = daemon[probe]["exec"]["command"]
        assert command[:5] == ["python", "-m", "monitoring.health", "daemon", "--socket"], probe
        assert command[5] == socket_path
    # warm-up may take minutes: the startup probe's budget, not the liveness probe, covers it
    startup = daemon["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= DEFAULTS["gpuDaemon"]["warmupSeconds"]

    cpu_worker = parts["worker"]
    liveness = cpu_worker["livenessProbe"]["exec"]["command"]
    assert liveness[:4] == ["python", "-m", "monitoring.health", "heartbeat"]
    assert "inspect" not in liveness and "celery" not in liveness
    heartbeat = liveness[liveness.index("--file") + 1]
    assert env(cpu_worker)["REELGEN_WORKER_HEARTBEAT_FILE"]["value"] == heartbeat
    max_age = float(liveness[liveness.index("--max-age") + 1])
    assert max_age >= 3 * float(env(cpu_worker)["REELGEN_WORKER_HEARTBEAT_S"]["value"])
    assert Path(heartbeat).parent.as_posix() == mounts(cpu_worker)["heartbeat"]

    dispatcher = containers(one(gpu, "Deployment", "rg-reelgen-dispatcher"))["dispatcher"]
    assert dispatcher["readinessProbe"]["httpGet"]["path"] == "/healthz"
    flower = containers(one(gpu, "Deployment", "rg-reelgen-flower"))["flower"]
    assert flower["readinessProbe"]["httpGet"]["path"] == "/healthcheck"


def test_grace_period_covers_soft_shutdown_and_the_longest_task(gpu: list[Obj]) -> None:
    worker = one(gpu, "Deployment", "rg-reelgen-worker")
    variables = env(containers(worker)["worker"])
    longest_task = int(variables["REELGEN_TASK_TIME_LIMIT_S"]["value"])
    soft = int(variables["REELGEN_SOFT_SHUTDOWN_S"]["value"])
    assert worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > longest_task + soft
    longer = one(
        render(GPU_VALUES, {"settings": {"taskTimeLimitSeconds": 7200}}), "Deployment", "rg-reelgen-worker"
    )
    assert longer["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > 7200 + soft


def test_beat_is_a_single_recreated_replica_and_dispatcher_too(cpu: list[Obj]) -> None:
    for name in ("rg-reelgen-beat", "rg-reelgen-dispatcher", "rg-reelgen-flower"):
        deployment = one(cpu, "Deployment", name)
        assert deployment["spec"]["replicas"] == 1, name
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}, name
    beat = env(containers(one(cpu, "Deployment", "rg-reelgen-beat"))["beat"])
    assert beat["REELGEN_NIGHTLY_CATALOG"]["value"] == NIGHTLY["nightly"]["catalog"]
    # without a nightly catalog there is nothing to schedule, and `reelgen beat` would refuse to start
    assert not [o for o in render() if o["metadata"]["name"] == "rg-reelgen-beat"]


@pytest.mark.parametrize(
    "values",
    [
        NIGHTLY,
        merge(GPU_VALUES, NIGHTLY),
        {"settings": {"taskTimeLimitSeconds": 7200}},
        {"settings": {"placements": "vertical,landscape", "aspects": ""}},
    ],
    ids=["default", "gpu", "long-tasks", "placements-alone"],
)
def test_every_process_gets_settings_reelgen_accepts(
    values: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.settings import load_settings
    from jobs.broker.celery_app import check_timeouts

    checked = 0
    for _, container in all_containers(render(values)):
        if container["name"] == "gpu-daemon":
            continue
        for name in [n for n in os.environ if n.startswith("REELGEN_")]:
            monkeypatch.delenv(name)
        for variable in container["env"]:
            if "value" in variable:
                monkeypatch.setenv(variable["name"], variable["value"])
        settings = load_settings()  # raises ConfigError on anything reelgen would refuse
        check_timeouts(settings)  # lease and visibility timeout against the task time limit
        checked += 1
    assert checked >= 3


def test_placements_reach_every_process_only_when_set(cpu: list[Obj]) -> None:
    assert all(
        "REELGEN_PLACEMENTS" not in env(c) for _, c in all_containers(cpu) if c["name"] != "gpu-daemon"
    )
    objects = render({"settings": {"placements": "vertical,feed-4x5"}})
    worker = containers(one(objects, "Deployment", "rg-reelgen-worker"))["worker"]
    assert env(worker)["REELGEN_PLACEMENTS"]["value"] == "vertical,feed-4x5"


def test_flower_auth_comes_from_a_secret(cpu: list[Obj]) -> None:
    flower = containers(one(cpu, "Deployment", "rg-reelgen-flower"))["flower"]
    ref = env(flower)["REELGEN_FLOWER__BASIC_AUTH"]["valueFrom"]["secretKeyRef"]
    secret = one(cpu, "Secret", ref["name"])
    assert secret["stringData"][ref["key"]] == "admin:flower-pw"
    # nothing generated: a random or looked-up password would change under `helm template` on every render
    with pytest.raises(helm.HelmError, match=r"flower\.auth\.password is required"):
        render(required={"redis": {"allowUnauthenticated": True}})
    assert render() == render()

    given = render({"flower": {"auth": {"username": "ops", "password": "s3cret-pw"}}})
    secret = one(given, "Secret", "rg-reelgen-flower-auth")
    assert secret["stringData"]["basic-auth"] == "ops:s3cret-pw"

    existing = render({"flower": {"auth": {"existingSecret": "flower-creds", "existingSecretKey": "auth"}}})
    flower = containers(one(existing, "Deployment", "rg-reelgen-flower"))["flower"]
    assert env(flower)["REELGEN_FLOWER__BASIC_AUTH"]["valueFrom"]["secretKeyRef"] == {
        "name": "flower-creds",
        "key": "auth",
    }
    assert not [o for o in existing if o["kind"] == "Secret" and "flower" in o["metadata"]["name"]]


def test_redis_and_s3_from_values_or_existing_secrets(cpu: list[Obj]) -> None:
    plain = env(containers(one(cpu, "Deployment", "rg-reelgen-dispatcher"))["dispatcher"])
    assert plain["REELGEN_REDIS_URL"]["value"] == "redis://redis-master:6379/0"
    assert "AWS_ACCESS_KEY_ID" not in plain  # no keys given: the pod's role

    inline = render(
        {
            "redis": {"host": "r.example", "password": "pw", "tls": True, "db": 2},
            "s3": {"endpoint": "http://minio:9000", "accessKeyId": "AK", "secretAccessKey": "SK"},
        }
    )
    secret = one(inline, "Secret", "rg-reelgen-credentials")
    assert secret["stringData"] == {
        "redis-password": "pw",
        "AWS_ACCESS_KEY_ID": "AK",
        "AWS_SECRET_ACCESS_KEY": "SK",
    }
    for _, container in all_containers(inline):
        if container["name"] == "gpu-daemon":
            continue  # the daemon talks to no Redis and no store
        variables = env(container)
        assert (
            variables["REELGEN_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"]
            == "rg-reelgen-credentials"
        )
        # Kubernetes expands $(VAR) from the variables defined before it
        names = list(variables)
        assert names.index("REELGEN_REDIS_PASSWORD") < names.index("REELGEN_REDIS_URL")
        assert (
            variables["REELGEN_REDIS_URL"]["value"] == "rediss://:$(REELGEN_REDIS_PASSWORD)@r.example:6379/2"
        )
        assert (
            variables["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "AWS_SECRET_ACCESS_KEY"
        )
        assert variables["AWS_ENDPOINT_URL_S3"]["value"] == "http://minio:9000"
        assert variables["REELGEN_S3_ENDPOINT_URL"]["value"] == "http://minio:9000"

    existing = render(
        {"redis": {"existingSecret": "redis-auth"}, "s3": {"existingSecret": "s3-keys"}}, NIGHTLY
    )
    assert not [o for o in existing if o["metadata"]["name"] == "rg-reelgen-credentials"]
    variables = env(containers(one(existing, "Deployment", "rg-reelgen-beat"))["beat"])
    assert variables["REELGEN_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "redis-auth",
        "key": "redis-password",
    }
    assert variables["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]["name"] == "s3-keys"


def test_worker_pdb_selects_the_worker_pods(gpu: list[Obj]) -> None:
    pdb = one(gpu, "PodDisruptionBudget", "rg-reelgen-worker")
    labels = one(gpu, "Deployment", "rg-reelgen-worker")["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_services_select_pods_that_expose_their_target_port(cpu: list[Obj]) -> None:
    services = [o for o in cpu if o["kind"] == "Service"]
    assert {s["metadata"]["name"] for s in services} == {"rg-reelgen-flower", "rg-reelgen-metrics"}
    for service in services:
        targets = [
            d
            for d in cpu
            if d["kind"] == "Deployment"
            and service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(targets) == 1, service["metadata"]["name"]
        ports = {p["name"] for c in containers(targets[0]).values() for p in c.get("ports", [])}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports


def test_keda_scales_the_workers_on_the_priority_sub_queues() -> None:
    import jobs.broker.queues as queues

    objects = render(GPU_VALUES, {"keda": {"enabled": True}, "redis": {"password": "pw"}})
    scaled = one(objects, "ScaledObject", "rg-reelgen-worker")
    worker = one(objects, "Deployment", "rg-reelgen-worker")
    assert scaled["spec"]["scaleTargetRef"]["name"] == worker["metadata"]["name"]
    assert "replicas" not in worker["spec"]  # the HPA KEDA makes owns it
    lists = {t["metadata"]["listName"] for t in scaled["spec"]["triggers"]}
    # kombu's Redis names: priority 0 is the queue itself, priority p is "<queue>:<p>"
    priorities = {v for k, v in vars(queues).items() if k.startswith("PRIORITY_")}
    queue = queues.QUEUE
    assert len(priorities) >= 2
    expected = {queue if p == 0 else f"{queue}:{p}" for p in priorities}
    assert lists == expected
    for trigger in scaled["spec"]["triggers"]:
        assert trigger["type"] == "redis"
        assert trigger["metadata"]["address"] == "redis-master:6379"
        assert trigger["authenticationRef"]["name"] == "rg-reelgen-redis"
    auth = one(objects, "TriggerAuthentication", "rg-reelgen-redis")
    assert auth["spec"]["secretTargetRef"][0] == {
        "parameter": "password",
        "name": "rg-reelgen-credentials",
        "key": "redis-password",
    }
    assert not [o for o in render(GPU_VALUES) if o["kind"] == "ScaledObject"]


def test_every_container_has_requests_limits_and_runs_unprivileged(gpu: list[Obj]) -> None:
    for deployment, container in all_containers(gpu):
        where = f"{deployment['metadata']['name']}/{container['name']}"
        resources = container["resources"]
        assert {"cpu", "memory"} <= resources["requests"].keys(), where
        assert "memory" in resources["limits"], where
        assert container["securityContext"]["allowPrivilegeEscalation"] is False, where
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, where
        assert "/tmp" in mounts(container).values(), where  # the one writable place a read-only root needs
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, where


@pytest.mark.parametrize("values", [{}, CPU_VALUES], ids=["default", "cpu"])
def test_defaults_and_cpu_values_render_for_a_cpu_only_cluster(values: dict[str, Any]) -> None:
    cpu = render(values)
    text = json.dumps(cpu)
    assert "nvidia.com/gpu" not in text and "reelgen-gpu" not in text
    worker = one(cpu, "Deployment", "rg-reelgen-worker")
    daemon = containers(worker)["gpu-daemon"]
    assert daemon["args"][daemon["args"].index("--device") + 1] == "cpu"
    assert "nodeSelector" not in worker["spec"]["template"]["spec"]


def test_dashboard_ships_in_a_grafana_configmap(cpu: list[Obj]) -> None:
    configmap = one(cpu, "ConfigMap", "rg-reelgen-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads(configmap["data"]["reelgen.json"])
    assert shipped == json.loads((CHART / "dashboards" / "reelgen.json").read_text())
    assert shipped["panels"]


def test_inconsistent_values_fail_the_render() -> None:
    with pytest.raises(helm.HelmError, match="codecThreads"):
        render({"worker": {"cpusPerGpu": 2, "codecThreads": 4}})
    with pytest.raises(helm.HelmError, match="secretAccessKey"):
        render({"s3": {"accessKeyId": "AK"}})


def test_redis_needs_a_password_unless_waived() -> None:
    flower = {"flower": {"auth": {"password": "pw"}}}
    with pytest.raises(helm.HelmError, match=r"redis\.password or redis\.existingSecret"):
        render(required=flower)
    for layer in ({"redis": {"password": "pw"}}, {"redis": {"existingSecret": "redis-auth"}}):
        dispatcher = containers(one(render(layer, required=flower), "Deployment", "rg-reelgen-dispatcher"))
        assert "REELGEN_REDIS_PASSWORD" in env(dispatcher["dispatcher"])


@pytest.mark.parametrize(
    "bad",
    [
        {"worker": {"replica": 2}},  # a typo of replicas
        {"gpuDaemon": {"device": "gpu"}},
        {"image": {"digest": "latest"}},
        {"metrics": {"port": "9100"}},
        {"logFormat": "yaml"},
        {"networkPolicy": {"enable": False}},
    ],
)
def test_values_schema_refuses_what_would_render_silently_wrong(bad: dict[str, Any]) -> None:
    report = helm.lint(CHART, merge(REQUIRED, bad), strict=True)
    assert any("schema" in error for error in report["errors"]), report


DIGEST = "sha256:" + "ab" * 32


def test_images_by_digest_and_no_cuda_image_for_a_daemon_on_the_cpu(cpu: list[Obj]) -> None:
    worker = containers(one(cpu, "Deployment", "rg-reelgen-worker"))
    assert worker["gpu-daemon"]["image"] == worker["worker"]["image"] == "ghcr.io/example/reelgen:0.1.0"
    gpu_worker = containers(one(render(GPU_VALUES), "Deployment", "rg-reelgen-worker"))
    assert gpu_worker["gpu-daemon"]["image"] == "ghcr.io/example/reelgen-gpu:0.1.0"

    pinned = render(GPU_VALUES, {"image": {"digest": DIGEST}, "gpuImage": {"digest": DIGEST, "tag": "x"}})
    for deployment, container in all_containers(pinned):
        assert container["image"].endswith("@" + DIGEST), (deployment["metadata"]["name"], container["name"])
    helm_test = one(pinned, "Pod", "rg-reelgen-test-health")
    assert helm_test["spec"]["containers"][0]["image"] == "ghcr.io/example/reelgen@" + DIGEST


def test_every_emptydir_is_size_limited(gpu: list[Obj]) -> None:
    pods = [o["spec"]["template"]["spec"] for o in gpu if o["kind"] == "Deployment"]
    pods += [o["spec"] for o in gpu if o["kind"] == "Pod"]
    for pod in pods:
        for volume in pod.get("volumes", []):
            if "emptyDir" in volume:
                assert volume["emptyDir"].get("sizeLimit"), volume["name"]


def test_network_policies_deny_by_default_and_allow_reelgens_flows(cpu: list[Obj]) -> None:
    policies = {o["metadata"]["name"]: o["spec"] for o in cpu if o["kind"] == "NetworkPolicy"}
    deny = policies["rg-reelgen-default-deny"]
    assert deny["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in deny and "egress" not in deny
    # every pod of the release is under the default deny
    for obj in cpu:
        if obj["kind"] in ("Deployment", "Pod"):
            labels = (obj["spec"]["template"] if obj["kind"] == "Deployment" else obj)["metadata"]["labels"]
            assert deny["podSelector"]["matchLabels"].items() <= labels.items(), obj["metadata"]["name"]

    def ports(rules: list[Obj]) -> set[int]:
        return {p["port"] for rule in rules for p in rule.get("ports", [])}

    egress = policies["rg-reelgen-egress"]["egress"]
    assert {53, DEFAULTS["redis"]["port"], 443} <= ports(egress)
    assert {DEFAULTS["metrics"]["port"], DEFAULTS["gpuDaemon"]["metricsPort"]} <= ports(
        policies["rg-reelgen-metrics"]["ingress"]
    )
    assert ports(policies["rg-reelgen-flower"]["ingress"]) == {DEFAULTS["flower"]["port"]}
    # the helm test pod reaches what it checks
    test_pod = one(cpu, "Pod", "rg-reelgen-test-health")
    allowed = policies["rg-reelgen-helm-test"]
    assert allowed["ingress"][0]["from"][0]["podSelector"]["matchLabels"].items() <= (
        test_pod["metadata"]["labels"].items()
    )
    assert not [o for o in render({"networkPolicy": {"enabled": False}}) if o["kind"] == "NetworkPolicy"]


def test_helm_test_hook_checks_the_services(cpu: list[Obj]) -> None:
    pod = one(cpu, "Pod", "rg-reelgen-test-health")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    command = pod["spec"]["containers"][0]["command"]
    assert command[:4] == ["python", "-m", "monitoring.health", "http"]
    urls = [command[i + 1] for i, arg in enumerate(command) if arg == "--url"]
    services = {o["metadata"]["name"]: o for o in cpu if o["kind"] == "Service"}
    assert urls == [
        f"http://rg-reelgen-metrics:{services['rg-reelgen-metrics']['spec']['ports'][0]['port']}/healthz",
        f"http://rg-reelgen-flower:{services['rg-reelgen-flower']['spec']['ports'][0]['port']}/healthcheck",
    ]

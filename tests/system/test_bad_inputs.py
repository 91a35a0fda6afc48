"""Hostile input, part 2: a corpus of bad inputs, generated here, run as ONE `reelgen run` next to one normal item.

Every item either succeeds or fails its own item with a named error; none crashes a worker or hangs the run.
Limits are set small through the environment so "beyond the limit" inputs stay small.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import av
import pytest

from tests.support.faults import (
    Leaks,
    base_env,
    catalog_line,
    manifests,
    run_reelgen,
    summary_failures,
    write_audio_only,
    write_image,
    write_video,
)
from tests.support.media import make_code_video
from tests.support.net import free_port

DONE = "done"
MAX_PIXELS = 320 * 320  # 320x180 and 180x320 fit; 640x360 does not
MAX_DURATION_S = 5.0
MAX_SOURCE_BYTES = 2 * 2**20


@dataclass
class Corpus:
    catalog: Path
    #: catalog key (item id, or line:N for a line without a usable id) -> "done" or the expected error class
    expected: dict[str, str]


def build_corpus(folder: Path) -> Corpus:
    folder.mkdir(parents=True)
    image = write_image(folder / "main.png")
    v = folder / "videos"
    v.mkdir()
    normal = write_video(v / "normal.mp4")
    data = normal.read_bytes()
    (v / "zero.mp4").write_bytes(b"")
    (v / "truncated.mp4").write_bytes(data[: len(data) // 3])
    (v / "random.mp4").write_bytes(os.urandom(200_000))
    (v / "oversized.mp4").write_bytes(os.urandom(MAX_SOURCE_BYTES + 1))
    write_image(v / "still.jpg")
    write_image(v / "still.png")
    write_audio_only(v / "audio-only.m4a")
    write_video(v / "too-many-pixels.mp4", size=(640, 360), seconds=2)
    write_video(v / "too-long.mp4", seconds=MAX_DURATION_S + 1.5)
    write_video(v / "very-short.mp4", seconds=0.3)
    write_video(v / "vertical.mp4", size=(180, 320))
    make_code_video(v / "rotated.mp4", seconds=3, fps=10, size=(320, 180), rotation=90)
    vfr_times = [0.0, 0.05, 0.3, 0.35, 0.9, 1.0, 1.1, 1.6, 1.65, 2.2, 2.5, 2.9]
    make_code_video(v / "vfr.mp4", fps=10, size=(320, 180), frame_times=vfr_times)
    write_video(v / "ten-bit.mp4", pix_fmt="yuv420p10le")
    write_video(v / "no-audio.mp4", audio=False)
    write_video(v / "all-black.mp4", black=True)
    (folder / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(500))

    lines: list[str] = []
    expected: dict[str, str] = {}

    def item(item_id: str, outcome: str, video: Path | str, picture: Path | str = image) -> None:
        lines.append(catalog_line(item_id, video, picture))
        expected[item_id] = outcome

    def raw(line: str, outcome: str, key: str | None = None) -> None:
        lines.append(line)
        expected[key or f"line:{len(lines)}"] = outcome

    item("normal", DONE, normal)
    item("zero-byte", "UnreadableVideo", v / "zero.mp4")
    item("truncated", "UnreadableVideo", v / "truncated.mp4")
    item("random-bytes", "UnreadableVideo", v / "random.mp4")
    item("oversized-bytes", "SourceTooLarge", v / "oversized.mp4")
    item("jpeg-not-video", "UnreadableVideo", v / "still.jpg")
    item("png-not-video", "UnreadableVideo", v / "still.png")
    item("audio-only", "UnreadableVideo", v / "audio-only.m4a")
    item("too-many-pixels", "VideoLimitExceeded", v / "too-many-pixels.mp4")
    item("too-long", "VideoLimitExceeded", v / "too-long.mp4")
    item("very-short", DONE, v / "very-short.mp4")
    item("vertical", DONE, v / "vertical.mp4")
    item("rotated", DONE, v / "rotated.mp4")
    item("vfr", DONE, v / "vfr.mp4")
    item("ten-bit", DONE, v / "ten-bit.mp4")
    item("no-audio", DONE, v / "no-audio.mp4")
    item("all-black", DONE, v / "all-black.mp4")
    item("missing-video", "SourceNotFound", v / "nothing-here.mp4")
    item("missing-image", "SourceNotFound", normal, folder / "no-such-image.png")
    item("corrupt-image", "ImageError", normal, folder / "corrupt.png")
    item("loopback-url", "ForbiddenSource", f"http://127.0.0.1:{free_port()}/x.mp4")
    item("metadata-url", "ForbiddenSource", "http://169.254.169.254/latest/meta-data/x.mp4")
    item("private-url", "ForbiddenSource", "http://10.1.2.3/x.mp4")
    item("ftp-url", "ForbiddenSource", "ftp://example.com/x.mp4")
    # bad catalog lines
    raw('{"item_id": "broken-json", "video": ', "BadCatalogLine")
    raw("[1, 2, 3]", "BadCatalogLine")
    raw(
        json.dumps({"item_id": "no-title", "video": str(normal), "image": str(image)}),
        "BadCatalogLine",
        "no-title",
    )
    raw(json.dumps({"video": str(normal), "image": str(image), "title": "t"}), "BadCatalogLine")
    raw(catalog_line("normal", normal, image), "DuplicateItemId")
    for bad_id in ("../escape", "a/b", ".hidden", "-dash", "x" * 129, "sp ace", "ünï", "/abs"):
        raw(catalog_line(bad_id, normal, image), "BadItemId")
    # a non-string id counts as a missing field
    raw(
        json.dumps({"item_id": 42, "video": str(normal), "image": str(image), "title": "t"}), "BadCatalogLine"
    )
    catalog = folder / "catalog.jsonl"
    catalog.write_text("\n".join(lines) + "\n")
    return Corpus(catalog, expected)


@dataclass
class CorpusRun:
    corpus: Corpus
    result: subprocess.CompletedProcess[str]
    out: Path
    state: Path
    leaks: Leaks


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CorpusRun]:
    tmp = tmp_path_factory.mktemp("bad-inputs")
    corpus = build_corpus(tmp / "corpus")
    env = base_env(
        tmp,
        REELGEN_MAX_PIXELS=str(MAX_PIXELS),
        REELGEN_MAX_DURATION_S=str(MAX_DURATION_S),
        REELGEN_MAX_SOURCE_BYTES=str(MAX_SOURCE_BYTES),
        REELGEN_TASK_RETRIES="1",
        REELGEN_HTTP_TIMEOUT_S="5",
    )
    leaks = Leaks(env["REELGEN_STATE_DIR"], temp_dirs=[tmp / "tmp", tmp / "out", tmp / "state"])
    result = run_reelgen(["run", str(corpus.catalog)], env, timeout_s=300)
    yield CorpusRun(corpus, result, tmp / "out", tmp / "state", leaks)


def test_every_bad_input_fails_its_own_item_with_a_named_error(corpus_run: CorpusRun) -> None:
    result, expected = corpus_run.result, corpus_run.corpus.expected
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # some items failed; the run itself did not
    failures = summary_failures(result.stdout)
    done = set(manifests(corpus_run.out))
    outcomes = {key: failures.get(key, DONE if key in done else "missing") for key in expected}
    assert outcomes == expected, output
    n_done = sum(1 for e in expected.values() if e == DONE)
    assert f"{n_done} done, {len(expected) - n_done} failed, 0 skipped" in result.stdout
    # every failure is a named error with a message, never the catch-all
    assert "InternalError" not in result.stdout and "WorkerLost" not in result.stdout


def test_no_worker_crashed_and_nothing_leaked(corpus_run: CorpusRun) -> None:
    logs = corpus_run.state / "logs"
    worker_log = "".join(p.read_text(errors="replace") for p in logs.glob("worker-*.log"))
    assert worker_log, "the run wrote no worker log"
    for sign in ("exited with 'signal", "WorkerLostError", "Traceback"):
        assert sign not in worker_log
    corpus_run.leaks.check()
    # nothing was written outside the output root, whatever the item ids tried
    escaped = [p for p in corpus_run.out.parent.iterdir() if p.name not in {"out", "state", "tmp", "corpus"}]
    assert not escaped
    # item folders, plus the results index under "_reelgen" (no item id can start with "_")
    assert sorted(p.name for p in corpus_run.out.iterdir() if p.name != "_reelgen") == sorted(
        k for k, e in corpus_run.corpus.expected.items() if e == DONE
    )


def test_unusual_but_valid_videos_render_with_the_right_facts(corpus_run: CorpusRun) -> None:
    found = manifests(corpus_run.out)

    def source(item_id: str) -> dict[str, object]:
        value = found[item_id]["source"]
        assert isinstance(value, dict)
        return value

    assert (source("vertical")["width"], source("vertical")["height"]) == (180, 320)
    rotated = source("rotated")
    assert (rotated["width"], rotated["height"]) == (180, 320) and rotated["rotation"] in (90, -90, 270)
    assert source("no-audio")["has_audio"] is False and source("normal")["has_audio"] is True
    assert source("very-short")["duration_s"] == pytest.approx(0.3, abs=0.05)
    for item_id, manifest in found.items():
        outputs = manifest["outputs"]
        assert isinstance(outputs, list) and len(outputs) == 1
        clip = Path(outputs[0]["uri"])
        with av.open(str(clip)) as container:
            stream = container.streams.video[0]
            assert stream.codec_context.pix_fmt == "yuv420p", item_id  # 10-bit input, 8-bit output
            assert (stream.width, stream.height) == (outputs[0]["width"], outputs[0]["height"])
            assert bool(container.streams.audio) == (item_id != "no-audio" and source(item_id)["has_audio"])
            frames = sum(1 for _ in container.decode(stream))
        assert frames == outputs[0]["frames"] > 0, item_id

"""The stage state's one codec: what the Celery tasks hand from stage to stage (JSON through the broker and the
segment fan-in) to and from the pipeline's records. Every record crosses here and nowhere else, so a field
added to a record is added to its codec beside the others.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from workers.analysis.windows import Window
from workers.media.containers import Timing, VideoInfo
from workers.media.segments import Segment
from workers.pipeline import Analysis, SampleScore

Json = dict[str, Any]


def info_to_json(info: VideoInfo) -> Json:
    return asdict(info)


def info_from_json(data: Json) -> VideoInfo:
    return VideoInfo(**{**data, "timing": Timing(data.get("timing", Timing.PTS))})


def segment_to_json(segment: Segment) -> Json:
    return asdict(segment)


def segment_from_json(data: Json) -> Segment:
    return Segment(**{**data, "times": tuple(data["times"])})


def samples_to_json(samples: list[SampleScore]) -> Json:
    return {"samples": [asdict(s) for s in samples]}


def samples_from_json(results: list[Json]) -> list[SampleScore]:
    """Every segment's samples, from the segments' results in any order."""
    return [
        SampleScore(
            **{
                **s,
                "box": tuple(s["box"]) if s["box"] else None,
                "seen": tuple(s["seen"]) if s.get("seen") else None,
                "homography": tuple(s.get("homography", ())),
                "whole": tuple(s["whole"]) if s.get("whole") else None,
                # a box from a worker of a release before the evidence was recorded: no source's own curve, so
                # the pooled one (workers.analysis.localisation.calibration), not "none" (no box at all)
                "method": s.get("method", "unrecorded" if s["box"] else "none"),
            }
        )
        for result in results
        for s in result["samples"]
    ]


def analysis_to_json(analysis: Analysis) -> Json:
    return asdict(analysis)


def analysis_from_json(data: Json) -> Analysis:
    return Analysis(
        window=Window(**data["window"]),
        curve=[tuple(p) for p in data["curve"]],  # type: ignore[misc]
        cuts=list(data["cuts"]),
        subject_boxes=[tuple(b) for b in data["subject_boxes"]],  # type: ignore[misc]
        crop_keys={k: [tuple(r) for r in v] for k, v in data["crop_keys"].items()},  # type: ignore[misc]
        padded=dict(data.get("padded", {})),
        padded_reason=dict(data.get("padded_reason", {})),
        picture_share=dict(data.get("picture_share", {})),
        text_boxes=[tuple(b) for b in data.get("text_boxes", [])],  # type: ignore[misc]
        picture=None if data.get("picture") is None else tuple(data["picture"]),  # type: ignore[arg-type]
        unread_text_boxes=[tuple(b) for b in data.get("unread_text_boxes", [])],  # type: ignore[misc]
        past_unread_text=list(data.get("past_unread_text", [])),
        safe_zone=dict(data.get("safe_zone", {})),
    )

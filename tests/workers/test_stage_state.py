"""The stage state's codec: every record the tasks pass between stages comes back equal through JSON."""

from __future__ import annotations

import json
from typing import Any

from workers.analysis.localisation.calibration import POOLED, probability
from workers.analysis.windows import Window
from workers.media.containers import Timing, VideoInfo
from workers.media.segments import Segment
from workers.pipeline import Analysis, SampleScore
from workers.stage_state import (
    analysis_from_json,
    analysis_to_json,
    info_from_json,
    info_to_json,
    samples_from_json,
    samples_to_json,
    segment_from_json,
    segment_to_json,
)


def through_broker(data: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(json.dumps(data))
    return decoded


def test_every_record_comes_back_equal_through_json() -> None:
    info = VideoInfo(1280, 720, 29.97, 31.5, True, 90, "h264", 0.133, Timing.DTS)
    assert info_from_json(through_broker(info_to_json(info))) == info

    segment = Segment(2, 10.0, 15.0, (10.0, 10.5, 11.0))
    assert segment_from_json(through_broker(segment_to_json(segment))) == segment

    samples = [
        SampleScore(10.0, 0.8, 0.6, (1.0, 2.0, 30.0, 40.0), [0.1, 0.2]),
        SampleScore(10.5, 0.1, 0.5, None, [0.3, 0.4]),
        SampleScore(
            11.0, 0.9, 0.6, (1.0, 2.0, 30.0, 40.0), [0.3, 0.4], (4.0, 5.0, 60.0, 80.0), (0.5, 0.0, 1.0) * 3
        ),
    ]
    assert samples_from_json([through_broker(samples_to_json(samples))]) == samples
    # a sample a worker of an earlier release wrote, without the evidence's method, keeps its box a candidate
    earlier = samples_to_json(samples[:2])
    for s in earlier["samples"]:
        del s["method"], s["confidence"]
    boxed, unboxed = samples_from_json([through_broker(earlier)])
    assert probability(boxed.method, boxed.confidence) == probability(POOLED, 0.0) > 0.5
    assert unboxed.method == "none"

    analysis = Analysis(
        window=Window(10.0, 15.0, 0.71, False),
        curve=[(10.0, 0.7), (10.5, 0.2)],
        cuts=[12.25],
        subject_boxes=[(10.0, 1.0, 2.0, 30.0, 40.0)],
        crop_keys={"9:16": [(10.0, 4, 0, 404, 720), (15.0, 8, 0, 404, 720)]},
        padded={"9:16": False, "1:1": True},
        padded_reason={"1:1": "the subject is larger than the crop"},
        picture_share={"1:1": 0.93},
        text_boxes=[(5.0, 6.0, 70.0, 20.0)],
        picture=(218.0, 0.0, 422.0, 360.0),
    )
    assert analysis_from_json(through_broker(analysis_to_json(analysis))) == analysis

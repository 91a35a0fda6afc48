"""The video-reading layer and the renderer agree on time and orientation (frame numbers burned in)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import av
import cv2
import numpy as np
import pytest
from celery.exceptions import SoftTimeLimitExceeded

from core.errors import RenderError, UnreadableVideo, VideoLimitExceeded
from devtools.real_media import feat_pexels_portrait
from tests.support.media import make_code_video, read_code, write_mjpeg_sizes
from workers.geometry import CropPath, CropRect, aspect_size
from workers.media import render as render_module
from workers.media.containers import Frame, MediaLimits
from workers.media.planes import Planes, frame_planes
from workers.media.render import EncodeOptions, OutputSpec, render_window
from workers.media.video import VideoSource


def test_probe_reports_display_facts(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    make_code_video(path, seconds=2.0, fps=25)
    with VideoSource(path) as source:
        info = source.info
    assert (info.width, info.height, info.rotation) == (640, 360, 0)
    assert info.fps == 25.0 and abs(info.duration_s - 2.0) < 0.05 and info.has_audio


def test_sample_returns_the_frame_on_screen_at_each_time(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    make_code_video(path, seconds=4.0, fps=25)
    targets = [0.0, 0.5, 1.03, 2.0, 3.99, 10.0]
    with VideoSource(path) as source:
        frames = source.sample(targets)
    assert [read_code(f.rgb) for f in frames] == [0, 12, 25, 50, 99, 99]
    assert all(abs(f.t - read_code(f.rgb) / 25) < 1e-6 for f in frames)


@pytest.mark.parametrize("rotation", [0, 90])
def test_sample_with_gray_keeps_every_frame_between_the_samples_from_one_pass(
    tmp_path: Path, rotation: int
) -> None:
    path = tmp_path / "v.mp4"
    make_code_video(path, seconds=3.0, fps=25, size=(640, 368), rotation=rotation, audio=False)

    def code(rgb: np.ndarray) -> int:
        return read_code(np.ascontiguousarray(np.rot90(rgb, -round(rotation / 90) % 4)))

    with VideoSource(path) as source:
        frames, grays = source.sample_with_gray([0.5, 1.0, 1.5], gray_width=source.info.width // 2)
        separate = source.sample([0.5, 1.0, 1.5])
        every = list(source.frames(frames[0].t, frames[-1].t + 1e-3))
    assert [code(f.rgb) for f in frames] == [code(f.rgb) for f in separate] == [12, 25, 37]
    # every frame from the first sample's to the last's, in order, upright, at half the display size
    assert [round(t * 25) for t, _ in grays] == list(range(12, 38)) == [round(f.t * 25) for f in every]
    info_h, info_w = frames[0].rgb.shape[:2]
    assert all(g.shape == (round(info_h / 2), info_w // 2) for _, g in grays)
    for (_, gray), full in zip(grays, every, strict=True):
        expected = cv2.resize(
            cv2.cvtColor(full.rgb, cv2.COLOR_RGB2GRAY), gray.shape[::-1], interpolation=cv2.INTER_AREA
        )
        # the luma plane, not an RGB round trip: equal up to colour-conversion rounding and range
        assert np.corrcoef(gray.ravel().astype(float), expected.ravel().astype(float))[0, 1] > 0.98


def test_the_pre_roll_skips_non_reference_frames_and_the_window_decodes_the_same(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    make_code_video(path, seconds=6.0, fps=25, audio=False)  # one GOP, B-frames: libx264's defaults
    start, end = 4.2, 5.0
    with VideoSource(path) as source:
        every = [round(t * 25) for t, _ in source._decoded(start)]
        skipping = [round(t * 25) for t, _ in source._decoded(start, skip_nonref_before=start)]
        window = list(source.frames(start, end))
        codes = [read_code(f.rgb) for f in window]
        plain = source._gathered(source._on_screen([start, 4.6, end], None), None, 160, None)
        fast = source.sample_with_gray([start, 4.6, end], gray_width=160)
        assert source._stream.codec_context.skip_frame == "DEFAULT"
    assert len(skipping) < 0.8 * len(every)  # a third or more of the pre-roll is never decoded
    assert [k for k in every if k >= start * 25] == [k for k in skipping if k >= start * 25]
    assert codes == [round(f.t * 25) for f in window] == list(range(105, 125))
    assert [(f.t, read_code(f.rgb)) for f in fast[0]] == [(f.t, read_code(f.rgb)) for f in plain[0]]
    assert [t for t, _ in fast[1]] == [t for t, _ in plain[1]]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(fast[1], plain[1], strict=True))


def test_analysis_decoding_skips_deblocking_and_shows_the_same_frames_nearly_alike() -> None:
    path = feat_pexels_portrait()
    assert path is not None, "python -m devtools.fetch_real_media"
    times = [0.5, 1.5, 3.0, 4.5]  # later frames of a GOP carry the skipped filter's drift
    with VideoSource(path) as source:
        filtered = source.sample(times)
    with VideoSource(path, deblock=False) as source:
        analysed = source.sample(times)
    assert [f.t for f in analysed] == [f.t for f in filtered]
    differences = [
        np.abs(a.rgb.astype(int) - b.rgb.astype(int)) for a, b in zip(analysed, filtered, strict=True)
    ]
    # the filter was skipped (the pictures differ), and what it would have smoothed is under a grey level or
    # two on average: measured 0.4-1.0 on this real camera clip
    assert max(int(d.max()) for d in differences) > 0
    assert max(float(d.mean()) for d in differences) < 2.0


def test_conversions_through_one_source_equal_each_frames_own_and_outlive_the_next() -> None:
    """A source keeps one swscale context for all its conversions: switching it between sizes must not change
    a picture, and a later conversion must not write into an earlier one's pixels."""
    path = feat_pexels_portrait()
    assert path is not None, "python -m devtools.fetch_real_media"
    times = [0.5, 1.5, 3.0]
    with VideoSource(path) as source:
        first = source.sample(times, width=200)
        kept = [f.rgb.copy() for f in first]
        source.sample(times, width=320)
        again = source.sample(times, width=200)
    for t, picture, copy, later in zip(times, first, kept, again, strict=True):
        with VideoSource(path) as alone:
            (own,) = alone.sample([t], width=200)
        assert picture.rgb.shape == (112, 200, 3)
        assert np.array_equal(picture.rgb, copy)
        assert np.array_equal(picture.rgb, own.rgb) and np.array_equal(later.rgb, own.rgb)


def test_a_frame_on_screen_for_longer_than_the_pre_roll_margin_is_still_the_one_sampled(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v.mp4"
    # nothing new from 1.0 s to 3 s, and the frame shown all that time is a non-reference B-frame
    times = [k / 25 for k in range(26)] + [3.0 + k / 25 for k in range(25)]
    make_code_video(path, fps=25, audio=False, frame_times=times)
    with VideoSource(path) as source:
        frames, grays = source.sample_with_gray([2.5, 3.2], gray_width=160)
    assert [read_code(f.rgb) for f in frames] == [25, 31]
    assert [round(t * 25) for t, _ in grays][:2] == [25, 75]


def test_sample_follows_presentation_time_with_variable_frame_rate(tmp_path: Path) -> None:
    path = tmp_path / "vfr.mp4"
    # 10 fps for the first second, then 40 fps: frame counting would land on the wrong frames
    times = [k / 10 for k in range(10)] + [1.0 + k / 40 for k in range(80)]
    make_code_video(path, frame_times=times, fps=25, audio=False)
    with VideoSource(path) as source:
        frames = source.sample([0.55, 1.5, 2.9])
    assert [read_code(f.rgb) for f in frames] == [5, 30, 86]


@pytest.mark.parametrize("rotation", [90, -90, 180])
def test_rotation_metadata_is_applied(tmp_path: Path, rotation: int) -> None:
    path = tmp_path / "r.mp4"
    make_code_video(path, seconds=1.0, size=(640, 368), rotation=rotation, audio=False)
    with VideoSource(path) as source:
        info = source.info
        frame = source.sample([0.4])[0]
    turned = np.rot90(frame.rgb, -round(rotation / 90) % 4)  # undo the display rotation
    assert (info.width, info.height) == ((368, 640) if rotation % 180 else (640, 368))
    assert frame.rgb.shape[:2] == (info.height, info.width)
    assert read_code(np.ascontiguousarray(turned)) == 10
    # the coloured quarter that was on the left of the coded picture has turned with it
    red = frame.rgb[..., 0].astype(int) - frame.rgb[..., 2].astype(int) > 80
    ys, xs = np.nonzero(red)
    expected_side = {90: "bottom", -90: "top", 180: "right"}[rotation]
    side = {
        "bottom": ys.min() > info.height / 2,
        "top": ys.max() < info.height / 2,
        "right": xs.min() > info.width / 2,
    }
    assert side[expected_side]


def test_not_a_video_is_a_named_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00\x01garbage" * 500)
    with pytest.raises(UnreadableVideo):
        VideoSource(bad)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(UnreadableVideo):
        VideoSource(empty)


def test_limits_are_checked_before_decoding_and_on_every_frame(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    make_code_video(path, seconds=2.0, audio=False)
    with VideoSource(path, limits=MediaLimits(max_pixels=640 * 360, max_duration_s=10)) as source:
        assert source.info.width == 640
    with pytest.raises(VideoLimitExceeded, match="longer"):
        VideoSource(path, limits=MediaLimits(max_pixels=10**8, max_duration_s=1))
    with pytest.raises(VideoLimitExceeded, match="header says 640x360, over the 1000 pixel limit"):
        VideoSource(path, limits=MediaLimits(max_pixels=1000, max_duration_s=10))
    with pytest.raises(VideoLimitExceeded, match="not a video shape"):
        VideoSource(path, limits=MediaLimits(max_pixels=10**8, max_duration_s=10, max_aspect=1.5))


def test_a_resolution_switch_past_the_limit_fails_on_the_frame_that_breaks_it(tmp_path: Path) -> None:
    # a small first frame, then big ones: the limit must hold for every decoded frame, not the first
    path = write_mjpeg_sizes(tmp_path / "switch.mkv", [(320, 240)] * 5 + [(1280, 960)] * 5)
    limits = MediaLimits(max_pixels=640 * 480, max_duration_s=10)
    with VideoSource(path, limits=limits) as source:
        assert (source.info.width, source.info.height) == (320, 240)
        with pytest.raises(VideoLimitExceeded, match=r"frame near 0\.\d+ s is 1280x960, over"):
            source.sample([0.1, 0.8])


def _centre_specs(folder: Path, crop_at: dict[str, Callable[[float], CropRect]]) -> list[OutputSpec]:
    specs = []
    for aspect in [(1, 1), (9, 16), (16, 9)]:
        size = aspect_size(aspect, 640, 360)
        rect = CropRect(
            (640 - size.crop_w) // 2 // 2 * 2, (360 - size.crop_h) // 2 // 2 * 2, size.crop_w, size.crop_h
        )
        path = crop_at.get(size.label, CropPath((0.0,), (rect,)))
        specs.append(OutputSpec(size.label, size.out_w, size.out_h, path, folder / f"{size.file_stem}.mp4"))
    return specs


def test_render_cuts_the_window_and_lands_crops_on_the_planned_pixels(tmp_path: Path) -> None:
    source = tmp_path / "v.mp4"
    make_code_video(source, seconds=6.0, fps=25, size=(640, 360))
    specs = _centre_specs(tmp_path, {})
    render_window(source, 1.0, 3.0, specs, EncodeOptions(crf=18, preset="ultrafast"))
    sounds = []
    for spec in specs:
        assert spec.frames == 50 and len(spec.crops) == 50
        with av.open(str(spec.path)) as clip:
            video, audio = clip.streams.video[0], clip.streams.audio[0]
            assert video.codec_context.name == "h264" and video.codec_context.pix_fmt == "yuv420p"
            assert (video.width, video.height) == (spec.width, spec.height)
            assert audio.codec_context.name == "aac"
            assert clip.duration is not None and abs(clip.duration / 1e6 - 2.0) <= 0.04 + 1e-6
            assert abs(float(audio.duration * audio.time_base) - 2.0) < 0.05  # type: ignore[operator]
            decoded = [f.to_ndarray(format="rgb24") for f in clip.decode(video=0)]
            clip.seek(0)
            sound = np.concatenate([f.to_ndarray() for f in clip.decode(audio=0)], axis=1)
        # the window's two seconds of the source's 440 Hz tone (plus at most one AAC frame of padding)
        assert 2 * 48_000 <= sound.shape[1] <= 2 * 48_000 + 1024
        middle = sound[0, 24_000:72_000]
        assert np.abs(middle).max() == pytest.approx(0.2, abs=0.02)
        assert np.count_nonzero(np.diff(np.sign(middle)) > 0) == pytest.approx(440, abs=2)
        sounds.append(sound)
        if spec.width >= 176:  # the code strip is 160 px wide: readable when the crop keeps it whole
            assert [read_code(f) for f in decoded] == list(range(25, 75))
    assert all(np.array_equal(sound, sounds[0]) for sound in sounds)  # one encode, copied into every clip


@pytest.mark.parametrize("keyint", [None, 25])
def test_fast_sampling_lands_within_one_period(tmp_path: Path, keyint: int | None) -> None:
    path = tmp_path / "v.mp4"
    make_code_video(path, seconds=6.0, fps=25, keyint=keyint, audio=False)
    targets = [k / 2 for k in range(12)]
    with VideoSource(path) as source:
        exact = source.sample(targets)
        fast = source.sample_fast(targets, period=0.5)
        small = source.sample_fast(targets, period=0.5, width=320)
    assert len(fast) == len(targets)
    for frame, target in zip(fast, targets, strict=True):
        assert abs(frame.t - target) <= 0.5 + 1e-6
        assert read_code(frame.rgb) == round(frame.t * 25)  # the frame's time is the frame's own
    if keyint == 25:
        assert {round(f.t * 25) % 25 for f in fast} == {0}  # keyframes only
    assert [round(f.t * 25) for f in exact] == [int(t * 25) for t in targets]  # the frame on screen
    assert small[0].rgb.shape == (180, 320, 3)


def test_keyframe_times_come_from_packets(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    make_code_video(path, seconds=3.0, fps=25, keyint=25, audio=False)
    with VideoSource(path) as source:
        assert source.keyframe_times() == pytest.approx([0.0, 1.0, 2.0])


def _failing_after(seconds: float, error: Exception) -> Callable[[float], CropRect]:
    def crop_at(t: float) -> CropRect:
        if t >= seconds:
            raise error
        return CropRect(0, 0, 360, 360)

    return crop_at


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("error", "raised"),
    [(ValueError("bad crop"), RenderError), (RuntimeError("a bug"), RuntimeError)],
)
def test_a_clip_failing_mid_window_stops_the_render_and_leaves_no_thread(
    tmp_path: Path, error: Exception, raised: type[Exception]
) -> None:
    """One clip's encoder fails halfway: the render stops with the named error (a bug stays itself) instead of
    blocking on the failed clip's full queue, and every clip thread is gone."""
    source = tmp_path / "v.mp4"
    make_code_video(source, seconds=6.0, fps=25, size=(640, 360))
    threads = threading.active_count()
    specs = _centre_specs(tmp_path, {"1:1": _failing_after(2.0, error)})
    with pytest.raises(raised):
        render_window(source, 1.0, 5.0, specs, EncodeOptions(preset="ultrafast"))
    assert threading.active_count() == threads
    assert all(spec.frames < 100 for spec in specs)


@pytest.mark.timeout(60)
def test_a_time_limit_during_the_decode_abandons_every_clip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception in the decoding thread (Celery's soft time limit arrives there) ends the clip threads too."""
    source = tmp_path / "v.mp4"
    make_code_video(source, seconds=6.0, fps=25, size=(640, 360))
    real_planes, calls = frame_planes, []

    def planes_until_timeout(frame: av.VideoFrame, rotation: int) -> Planes:
        calls.append(frame)
        if len(calls) > 20:
            raise SoftTimeLimitExceeded()
        return real_planes(frame, rotation)

    monkeypatch.setattr(render_module, "frame_planes", planes_until_timeout)
    threads = threading.active_count()
    specs = _centre_specs(tmp_path, {})
    with pytest.raises(SoftTimeLimitExceeded):
        render_window(source, 1.0, 5.0, specs, EncodeOptions(preset="ultrafast"))
    assert threading.active_count() == threads
    assert all(spec.frames <= 20 for spec in specs)


def test_each_sample_is_handed_on_as_it_is_decoded_and_only_from_the_pass_kept(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    # the frame on screen from 1.0 s to 3 s is a non-reference B-frame shown for longer than the pre-roll
    # margin: the pass that skips such frames is decoded again without skipping
    times = [k / 25 for k in range(26)] + [3.0 + k / 25 for k in range(25)]
    make_code_video(path, fps=25, audio=False, frame_times=times)
    handed: list[tuple[int, int, int]] = []
    with VideoSource(path) as source:
        greys_made: list[None] = []
        to_gray = source._to_gray

        def counted(frame: av.VideoFrame, width: int) -> np.ndarray:
            greys_made.append(None)
            return to_gray(frame, width)

        source._to_gray = counted  # type: ignore[method-assign]

        def handed_on(frame: Frame, copies: int) -> None:
            handed.append((read_code(frame.rgb), copies, len(greys_made)))

        frames, grays = source.sample_with_gray([2.5, 2.6, 3.2, 3.5], gray_width=160, on_sample=handed_on)
    assert [read_code(f.rgb) for f in frames] == [25, 25, 31, 38]
    # the frame on screen at 2.5 and 2.6 s once, with its two copies; nothing of the pass thrown away
    assert [(code, copies) for code, copies, _ in handed] == [(25, 2), (31, 1), (38, 1)]
    # each one as soon as it was decoded, not once the pass was over
    decoded = [next(k for k, (t, _) in enumerate(grays) if t == times[code]) + 1 for code, _, _ in handed]
    assert [made for _, _, made in handed] == decoded and decoded[0] == 1 and decoded[-1] == len(grays)

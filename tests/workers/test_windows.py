from __future__ import annotations

import numpy as np

from workers.analysis.windows import CUT_SHARE, FLASH_S, best_window, detect_cuts


def test_best_window_finds_the_high_stretch() -> None:
    times = [k / 2 for k in range(40)]  # 20 s at 2 fps
    values = [1.0 if 8 <= t < 13 else 0.1 for t in times]
    window = best_window(times, values, [], duration_s=20.0, window_s=5.0, step_s=0.5)
    assert (window.start_s, window.end_s) == (8.0, 13.0)
    assert not window.truncated
    assert abs(window.score - 1.0) < 1e-9


def test_a_window_opens_on_the_first_sample_showing_the_product_even_off_the_grid() -> None:
    # sampled frames are the ones nearest each requested time (every other one here 62.5 ms early): a grid
    # start opens the clip before the product's first sample, or closes it after its last
    times = [k / 2 - (0.0625 if k % 2 else 0.0) for k in range(40)]
    values = [1.0 if 4.4 <= t < 9.2 else 0.2 for t in times]
    window = best_window(times, values, [], duration_s=20.0, window_s=5.0, step_s=0.5)
    assert (window.start_s, window.end_s) == (4.4375, 9.4375)
    assert window.score == 1.0


def test_short_video_gives_whole_video_truncated() -> None:
    window = best_window([0.0, 0.5, 1.0], [0.2, 0.4, 0.6], [], duration_s=1.4, window_s=5.0, step_s=0.5)
    assert (window.start_s, window.end_s, window.truncated) == (0.0, 1.4, True)


def test_window_spanning_a_cut_is_penalised() -> None:
    times = [k / 2 for k in range(40)]
    values = [0.8] * 40
    values[20:30] = [0.9] * 10  # 10 s .. 15 s slightly better, but a cut at 12 s splits it
    cut_free = best_window(times, values, [], duration_s=20.0, window_s=5.0, step_s=0.5)
    assert cut_free.start_s == 10.0
    with_cut = best_window(times, values, [12.0], duration_s=20.0, window_s=5.0, step_s=0.5)
    assert not (with_cut.start_s < 12.0 < with_cut.end_s)
    assert with_cut.score > 0.8 * (1 - CUT_SHARE)


def test_a_product_in_a_shot_shorter_than_the_window_wins_over_a_long_shot_without_it() -> None:
    # the product is found in three samples of a 4.5 s shot (cuts at 5.2 and 9.7); the 8 s shot after it shows
    # none: every window holding the product spans a cut, and it must still be chosen
    times = [k / 2 for k in range(36)]
    values = [1.0 if 6.4 <= t < 8.0 else (0.22 if t < 10 else 0.21) for t in times]
    window = best_window(times, values, [5.2, 9.7], duration_s=18.0, window_s=5.0, step_s=0.5)
    assert window.start_s <= 6.5 and window.end_s >= 8.0


def test_a_window_does_not_open_or_close_on_a_flash_of_another_shot() -> None:
    # the product's shot (cuts at 5.25 and 9.75 s) is shorter than the window, so every window holding it spans
    # a cut; the earliest of the best opens 0.25 s before the first cut, on a flash of the shot before: the
    # window opens on the first sample after the cut instead
    times = [k / 2 for k in range(40)]
    values = [1.0 if 5.5 <= t <= 9.5 else 0.2 for t in times]
    window = best_window(times, values, [5.25, 9.75], duration_s=20.0, window_s=5.0, step_s=0.5)
    assert window.start_s == 5.5 and window.end_s - 9.75 >= FLASH_S
    # and a shot of exactly the window's length, which no candidate start matches: the best would close on a
    # flash of the shot after it
    values = [1.0 if 10.0 <= t <= 14.5 else 0.2 for t in times]
    window = best_window(times, values, [9.75, 14.75], duration_s=20.0, window_s=5.0, step_s=0.5)
    assert window.end_s - 14.75 >= FLASH_S and window.start_s <= 10.5


def test_where_every_window_has_a_flash_the_best_of_them_is_taken() -> None:
    times = [k / 2 for k in range(12)]
    values = [0.5] * 12
    window = best_window(
        times, values, [0.6, 1.4, 2.2, 3.0, 3.8, 4.6, 5.4], duration_s=6.0, window_s=5.0, step_s=0.5
    )
    assert window.score > 0


def test_last_window_ends_at_the_video_end() -> None:
    times = [k / 2 for k in range(15)]
    values = [0.0] * 12 + [1.0] * 3
    window = best_window(times, values, [], duration_s=7.3, window_s=5.0, step_s=0.5)
    assert abs(window.end_s - 7.3) < 1e-6


def test_detect_cuts_between_different_histograms() -> None:
    a = np.zeros(128, np.float32)
    a[3] = 1.0
    b = np.zeros(128, np.float32)
    b[90] = 1.0
    cuts = detect_cuts([0.0, 0.5, 1.0, 1.5], [a, a, b, b])
    assert cuts == [0.75]
    assert detect_cuts([0.0, 0.5], [a, a]) == []

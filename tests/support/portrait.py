"""A real camera clip cut square, as a square video "covering" it shows it: a woman's face filling the frame (the
text detector fires on her eyes and teeth), with a caption drawn on the wall beside her or not."""

from __future__ import annotations

import cv2
import numpy as np

from devtools.real_media import feat_pexels_portrait

SIDE = 720
#: the portrait clip's woman, her face filling a square frame as a square video "covering" it shows her
CUT = slice(140, 500)
#: a caption drawn on the wall beside her
CAPTION = (20, 150, 330, 240)


def portrait(start_s: float, end_s: float, caption: bool = False) -> list[np.ndarray]:
    """RGB frames of the real portrait clip from start_s to end_s, cut square and scaled to SIDE."""
    path = feat_pexels_portrait()
    assert path is not None, "python -m devtools.fetch_real_media"
    capture = cv2.VideoCapture(str(path))
    capture.set(cv2.CAP_PROP_POS_MSEC, start_s * 1000)
    frames = []
    while capture.get(cv2.CAP_PROP_POS_MSEC) < end_s * 1000:
        ok, bgr = capture.read()
        if not ok:
            break
        rgb = cv2.cvtColor(
            cv2.resize(bgr[:, CUT], (SIDE, SIDE), interpolation=cv2.INTER_CUBIC), cv2.COLOR_BGR2RGB
        )
        if caption:
            x0, y0, x1, y1 = CAPTION
            cv2.rectangle(rgb, (x0, y0), (x1, y1), (255, 255, 255), -1)
            cv2.putText(
                rgb,
                "SALE 50%",
                (x0 + 14, y1 - 28),
                cv2.FONT_HERSHEY_DUPLEX,
                1.6,
                (20, 20, 20),
                3,
                cv2.LINE_AA,
            )
        frames.append(rgb)
    capture.release()
    return frames

"""Evidence by local features: ORB keypoints of the main image matched to the frame's, a RANSAC homography, and
the pixels where the warped image agrees with the frame round the agreeing keypoints."""

from __future__ import annotations

import math

import cv2
import numpy as np

from workers.analysis.localisation.common import Box, Located, grown_mask
from workers.analysis.localisation.parameters import (
    AGREE_BLUR,
    AGREE_LEVEL,
    AGREE_SIDE,
    FINE_SCALE,
    FULL_INLIERS,
    MAX_KEYPOINTS,
    MIN_INLIERS,
    PART_SHARE,
    RATIO,
    RIM,
    SMALL_SIDE,
)

#: a frame's keypoints: their positions (frame pixels) and ORB descriptors
Keys = tuple[np.ndarray, np.ndarray]


def _grey(frame: np.ndarray) -> np.ndarray:
    return np.asarray(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY))


def _keypoints(grey: np.ndarray, orb: cv2.ORB, scale: float) -> Keys | None:
    """The keypoints of grey, the frame scaled by scale, at their places in the frame (None: too few to match)."""
    keypoints, descriptors = orb.detectAndCompute(grey, None)
    if descriptors is None or len(keypoints) < MIN_INLIERS:
        return None
    return np.array([k.pt for k in keypoints], np.float32).reshape(-1, 2) / scale, descriptors


def _plausible(quad: np.ndarray, width: int, height: int) -> bool:
    """A homography's image of the product's outline that a real view could give: convex, not folded, not
    vanishingly small, not many times the frame."""
    if not cv2.isContourConvex(quad.astype(np.float32).reshape(-1, 1, 2)):
        return False
    area = cv2.contourArea(quad.astype(np.float32))
    if area < 0.002 * width * height or area > 4.0 * width * height:
        return False
    sides = np.linalg.norm(np.roll(quad, -1, axis=0) - quad, axis=1)
    return bool(sides.min() > 0.15 * sides.max())


class FeatureSource:
    """The product's keypoints and outline, built once from its main image; `find` per frame."""

    def __init__(
        self, image: np.ndarray, mask: np.ndarray, own: np.ndarray | None, studio: bool, whole: Box | None
    ) -> None:
        self._image = image
        self._mask = mask
        self._studio = studio
        self._whole = whole
        self._orb = cv2.ORB_create(nfeatures=MAX_KEYPOINTS, nlevels=8)  # type: ignore[attr-defined]
        grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        keypoints, descriptors = self._orb.detectAndCompute(grey, mask)
        #: (keypoint positions in the main image, descriptors): the image's own, then its small copy's, tried
        #: only where the image's own find nothing (adding them to one pool let them win homographies of
        #: products seen large, and boxes held the product less often)
        self._templates: list[tuple[np.ndarray, np.ndarray]] = []
        if descriptors is not None:
            self._templates.append(
                (np.array([k.pt for k in keypoints], np.float32).reshape(-1, 2), descriptors)
            )
            small_points, small_descriptors = self._small_keypoints(grey)
            if small_descriptors is not None and len(small_points) >= MIN_INLIERS:
                self._templates.append((small_points, small_descriptors))
        self._corners = self._outline(mask)
        #: the main image's pixels that may agree with a frame where the product is seen again: its own pixels
        #: and a rim round them (RIM) where they are known, as a photo's surroundings (a road, a dark hill)
        #: agree with any plain or dark stretch of the frame round the product and stretched its box; else all
        self._agreeable = mask if own is None else grown_mask(own, RIM)
        self._matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
        # the pyramid's levels from FINE_SCALE down to the frame's own size
        levels = math.ceil(math.log(FINE_SCALE) / math.log(self._orb.getScaleFactor()))
        self._fine_orb = cv2.ORB_create(nfeatures=MAX_KEYPOINTS, nlevels=levels)  # type: ignore[attr-defined]

    def _small_keypoints(self, grey: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Keypoints of the main image shrunk to SMALL_SIDE, as a product seen small shows it: ORB's pyramid
        of the image reaches down only to about a quarter of its size, and at that size its border margin
        leaves no room for keypoints; a product filling a tenth of a frame is smaller still. The copy is padded
        so that keypoints near its outline are found, and their positions mapped back onto the image."""
        small = SMALL_SIDE / max(grey.shape[:2])
        if small >= 0.5:
            return np.empty((0, 2), np.float32), None
        shrunk = cv2.resize(grey, None, fx=small, fy=small, interpolation=cv2.INTER_AREA)
        mask = cv2.resize(self._mask, None, fx=small, fy=small, interpolation=cv2.INTER_NEAREST)
        orb = cv2.ORB_create(nfeatures=300, nlevels=2, edgeThreshold=15)  # type: ignore[attr-defined]
        # a keypoint's patch reaches this far round it: a pad as wide lets the outline's own be described
        pad = orb.getPatchSize()
        shrunk = cv2.copyMakeBorder(shrunk, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
        mask = cv2.copyMakeBorder(mask, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=0)
        keypoints, descriptors = orb.detectAndCompute(shrunk, mask)
        points = (np.array([k.pt for k in keypoints], np.float32).reshape(-1, 2) - pad) / small
        return points, descriptors

    @property
    def textured(self) -> bool:
        """Whether the product has enough keypoints for its features to be the evidence."""
        return bool(self._templates) and len(self._templates[0][0]) >= FULL_INLIERS

    @staticmethod
    def _outline(mask: np.ndarray) -> np.ndarray:
        ys, xs = np.nonzero(mask)
        x0, y0, x1, y1 = float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)
        return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32).reshape(-1, 1, 2)

    def keys(self, frame: np.ndarray) -> Keys | None:
        """The frame's keypoints, for find."""
        return _keypoints(_grey(frame), self._orb, 1.0)

    def find(self, frame: np.ndarray, fine: bool, keys: Keys | None) -> Located | None:
        grey = _grey(frame)
        found = self._features_at(frame, keys if keys is not None else _keypoints(grey, self._orb, 1.0))
        return self.fine(frame, grey) if found is None and fine else found

    def fine(self, frame: np.ndarray, grey: np.ndarray | None = None) -> Located | None:
        """The product by the keypoints of the frame (grey: its grey, if already made) scaled up FINE_SCALE
        times."""
        grey = _grey(frame) if grey is None else grey
        fine = cv2.resize(grey, None, fx=FINE_SCALE, fy=FINE_SCALE, interpolation=cv2.INTER_LINEAR)
        return self._features_at(frame, _keypoints(fine, self._fine_orb, FINE_SCALE))

    def _features_at(self, frame: np.ndarray, keys: Keys | None) -> Located | None:
        """The product by the frame's keypoints (positions in the frame's pixels, descriptors)."""
        if keys is None:
            return None
        for points, template in self._templates:
            found = self._matched(frame, points, template, *keys)
            if found is not None:
                return found
        return None

    def _matched(
        self,
        frame: np.ndarray,
        points: np.ndarray,
        template: np.ndarray,
        at: np.ndarray,
        descriptors: np.ndarray,
    ) -> Located | None:
        pairs = self._matcher.knnMatch(template, descriptors, k=2)
        good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < RATIO * p[1].distance]
        if len(good) < MIN_INLIERS:
            return None
        src = points[[m.queryIdx for m in good]].reshape(-1, 1, 2)
        dst = at[[m.trainIdx for m in good]].reshape(-1, 1, 2)
        homography, inliers = cv2.findHomography(src, dst, cv2.RANSAC, 4.0)
        if homography is None or inliers is None or int(inliers.sum()) < MIN_INLIERS:
            return None
        quad = cv2.perspectiveTransform(self._corners, homography).reshape(-1, 2)
        if not _plausible(quad, frame.shape[1], frame.shape[0]):
            return None
        h, w = frame.shape[:2]
        x0, y0 = max(0.0, float(quad[:, 0].min())), max(0.0, float(quad[:, 1].min()))
        x1, y1 = min(float(w), float(quad[:, 0].max())), min(float(h), float(quad[:, 1].max()))
        # The product is the part of the main image seen again in the frame: the pixels where the image, warped
        # by the homography, agrees with the frame, joined to the agreeing keypoints (which cluster where the
        # texture is: their extent alone holds only part of the product). The outline maps all the main image shows: a photo to its edges maps its surroundings too,
        # and a plain "studio" border can frame a whole scene (a sky over a launch pad and its rocket).
        points = dst.reshape(-1, 2)[inliers.ravel().astype(bool)]
        (ex0, ey0, ex1, ey1), seen = self._seen_again(frame, homography, points, (x0, y0, x1, y1))
        x0, y0, x1, y1 = max(x0, ex0), max(y0, ey0), min(x1, ex1), min(y1, ey1)
        if x1 - x0 < 4 or y1 - y0 < 4:
            return None
        confidence = min(1.0, int(inliers.sum()) / FULL_INLIERS)
        return Located(
            (x0, y0, x1, y1),
            confidence,
            "features",
            tuple((float(x), float(y)) for x, y in quad),
            seen,
            tuple(float(v) for v in homography.ravel()),
            self._whole,
        )

    def _seen_again(
        self, frame: np.ndarray, homography: np.ndarray, points: np.ndarray, box: Box
    ) -> tuple[Box, Box | None]:
        """The box of the frame's pixels that the main image, warped onto the frame, shows again (up to a gain
        per colour channel: the video is re-lit and white-balanced), in the regions joined to the agreeing
        keypoints, counting only the product's own pixels and their rim where known (_agreeable); never less
        than the keypoints' own extent. Worked out inside box (the outline's bounds) at
        most AGREE_SIDE pixels a side: the comparison is of blurred colours, which need no more. With it, the
        same pixels' extent in the main image (None if the homography cannot be inverted)."""
        x0, y0 = int(box[0]), int(box[1])
        x1, y1 = max(x0 + 1, math.ceil(box[2])), max(y0 + 1, math.ceil(box[3]))
        scale = min(1.0, AGREE_SIDE / max(x1 - x0, y1 - y0))
        size = (max(1, round((x1 - x0) * scale)), max(1, round((y1 - y0) * scale)))
        to_roi = (
            np.array([[scale, 0.0, -x0 * scale], [0.0, scale, -y0 * scale], [0.0, 0.0, 1.0]]) @ homography
        )
        warped = cv2.warpPerspective(self._image, to_roi, size, flags=cv2.INTER_LINEAR)
        valid = cv2.warpPerspective(self._agreeable, to_roi, size, flags=cv2.INTER_NEAREST)
        roi = cv2.resize(frame[y0:y1, x0:x1], size, interpolation=cv2.INTER_AREA)
        sigma = max(0.5, AGREE_BLUR * scale)
        seen = cv2.GaussianBlur(roi, (0, 0), sigma).astype(np.float32)
        shown = cv2.GaussianBlur(warped, (0, 0), sigma).astype(np.float32)
        at = (points - np.array([x0, y0])) * scale
        xs = np.clip(at[:, 0].round().astype(int), 0, size[0] - 1)
        ys = np.clip(at[:, 1].round().astype(int), 0, size[1] - 1)
        # the gain is read where the product is for certain: at its agreeing keypoints
        gain = np.median(seen[ys, xs] / np.maximum(shown[ys, xs], 8.0), axis=0)
        differs = np.abs(seen - shown * gain).max(axis=2)
        agree = ((differs < AGREE_LEVEL) & (valid > 0)).astype(np.uint8)
        agree = cv2.morphologyEx(agree, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        _, labels, stats, _ = cv2.connectedComponentsWithStats(agree)
        joined = set(labels[ys, xs].tolist()) - {0}
        if self._studio:
            # inside a studio shot's outline every agreeing pixel is the product's: a part that an occluder
            # cuts off from the keypoints counts too, when it is no speck
            least = PART_SHARE * sum(int(stats[label, cv2.CC_STAT_AREA]) for label in joined)
            joined |= {k for k in range(1, len(stats)) if stats[k, cv2.CC_STAT_AREA] >= least}
        (px0, py0), (px1, py1) = points.min(axis=0), points.max(axis=0)
        ex0, ey0, ex1, ey1 = float(px0), float(py0), float(px1), float(py1)
        for label in joined:
            x, y, bw, bh = (int(v) for v in stats[label, :4])
            ex0, ey0 = min(ex0, x0 + x / scale), min(ey0, y0 + y / scale)
            ex1, ey1 = max(ex1, x0 + (x + bw) / scale), max(ey1, y0 + (y + bh) / scale)
        return (ex0, ey0, ex1, ey1), self._in_image(np.isin(labels, list(joined)), to_roi, points, homography)

    def _in_image(
        self, region: np.ndarray, to_roi: np.ndarray, points: np.ndarray, homography: np.ndarray
    ) -> Box | None:
        """The extent in the main image of the agreeing region (a mask over the comparison's pixels) and the
        agreeing keypoints (frame pixels): mapped back pixel by pixel, as a rotated or tilted product's box
        in the frame maps back to more than the product."""
        try:
            from_roi, from_frame = np.linalg.inv(to_roi), np.linalg.inv(homography)
        except np.linalg.LinAlgError:
            return None
        mapped = [
            cv2.perspectiveTransform(points.reshape(-1, 1, 2).astype(np.float32), from_frame).reshape(-1, 2)
        ]
        pixels = cv2.findNonZero(region.astype(np.uint8))
        if pixels is not None:
            # a homography maps a convex region on the product convexly (the product lies on one side of its
            # horizon), so the region's extent in the image is that of its convex hull's corners
            hull = cv2.convexHull(pixels).astype(np.float32) + 0.5
            mapped.append(cv2.perspectiveTransform(hull, from_roi).reshape(-1, 2))
        at = np.concatenate(mapped)
        corners = self._corners.reshape(-1, 2)
        (x0, y0), (x1, y1) = (
            np.maximum(at.min(axis=0), corners.min(axis=0)),
            np.minimum(at.max(axis=0), corners.max(axis=0)),
        )
        return (float(x0), float(y0), float(x1), float(y1)) if x1 > x0 and y1 > y0 else None

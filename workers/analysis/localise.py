"""Where the product is in a frame, from its main image, without model weights: local features first, colour second,
outline last.

A seller's main image is a studio shot of the product; in the video the same product is turned, tilted, scaled,
re-lit, partly covered and held in a hand. Correlating the whole image at fixed scales fails on all of that. Local
features survive it: ORB keypoints of the product matched to the frame's (Lowe's ratio test), then a RANSAC
homography that only a rigid, planar-ish object seen again can satisfy, give the product's outline and a confidence
from the number of agreeing matches; ORB on frames LOCATE_SIDE long finds what SIFT finds, at a fraction of its
cost. The outline is the whole main image's, often more than the product: the box is where the warped image agrees
with the frame round the agreeing keypoints. A product seen smaller than the image's keypoint pyramid reaches is
matched by a small copy's keypoints; one smaller than ORB's keypoint patch is looked for again on the frame scaled
up (FINE_SCALE), on every other sample of a run that found nothing and outwards from where that finds it.

A plain product has too few keypoints, and a textured one seen small or blurred loses them; there its colours (a
hue–saturation histogram of its own pixels: a studio shot's foreground, or the product cut cleanly out of a photo to
its edges) give a blob, trusted less. Colours alone are no evidence, as a product's hues also cover faces, walls and
signs: a blob counts where its pixels look like the product's (LOOK_NCC). It grows over fainter colour matches while
that makes it look more like the product (a blob often holds only the lit side), and keeps to its strongly matching
core where a hand of the same hues has joined it. A plain product under another light than its photo's has other
hues: where its colours as photographed find nothing, they are tried under warmer, cooler, greener and redder light
(LIGHTS), then under each of a few stronger lights alone (STRONG_LIGHTS); taken from the start, the other lights'
blobs would run into the background. For a product whose colours are not skin's (a hand or a face brings a second
blob of skin's hues), the frame's one blob of its colours is the product where it holds nearly all of them
(DISTINCT_SHARE), and where no blob is alone, the one blob under a few strong green casts (CAST_LIGHTS). A plain
grey or dark product has only its outline: it is found where the pixels inside its silhouette stand out from those
round it, also where it runs a little past the frame's edge, and not in a busy scene, where many things stand out as
much. A photo of the product among other things is found whole in no frame: where a run of samples finds nothing,
each of its parts is looked for on its own, and the part found in the most samples (at least three) is the product.

Over a video, whole_boxes completes a box a hand cuts short to the extent the frames seeing the product whole agree
on, and at least to its own pixels' extent in the main image where those are an outline (a hand may hide the same
side throughout). Where the features lose the product for a sample or two (a swing blurs it, it turns a side the
main image does not show), follow finds its pixels from the neighbouring sample again, where their colour and the
way back agree. The figures behind these choices are measured in docs/performance.md. Pure: arrays in, boxes out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np

from workers.geometry import box_union, iou, scale_box

Box = tuple[float, float, float, float]

#: the main image is worked on at most this long a side: enough keypoints, bounded cost
TEMPLATE_SIDE = 320
#: frames are searched at this long side (scaled up or down): small products need the pixels
LOCATE_SIDE = 768
#: keypoints kept per image, the strongest (a frame's; the main image, at TEMPLATE_SIDE, has fewer): a busy
#: scene's corners outnumber a small product's, and with fewer kept a product a seventh of a frame's height in a
#: star field or a street loses its own to them; more finds nothing more on frames LOCATE_SIDE long
MAX_KEYPOINTS = 4000
#: a product the features miss is looked for again on the frame scaled up this much: ORB describes a keypoint
#: by the 31-pixel patch round it, more than the whole height of a car seen a tenth of a frame wide. Only the
#: finest levels of that frame's pyramid are searched: a product seen small is no larger than its main image
FINE_SCALE = 2.0
FINE_LEVELS = 3
#: samples apart at which a run of samples is searched scaled up (ProductLocator.locate_all)
FINE_EVERY = 2
#: matches a homography must explain before the product counts as found by its features
MIN_INLIERS = 8
#: inliers at which the features' confidence saturates
FULL_INLIERS = 40
#: a template with fewer keypoints than this is "plain": its colours are the evidence instead
MIN_TEMPLATE_KEYPOINTS = 40
#: a copy of the main image this long a side gives the keypoints of a product seen small (see _small_keypoints)
SMALL_SIDE = 96
SMALL_PAD = 32
#: the main image warped onto the frame agrees with it where, both blurred by AGREE_BLUR px and the image
#: scaled by a gain per channel (at most MAX_GAIN either way), no channel differs by AGREE_LEVEL (of 255)
AGREE_BLUR = 2.0
AGREE_SIDE = 256
AGREE_LEVEL = 28.0
MAX_GAIN = 2.5
#: in a studio shot, an agreeing region not joined to the keypoints counts when it is at least this share of
#: the joined ones' area
SPLIT_SHARE = 0.1
#: agreeing pixels mapped back into the main image, at most (a subsample: only their extent is wanted)
IN_IMAGE_POINTS = 4000
#: Lowe's ratio test: the best match must be this much closer than the second best
RATIO = 0.78
#: a plain product's colours are evidence only when its foreground's median saturation is at least this
#: (of 255): hue means nothing on grey, and a grey product's histogram matches every grey wall, road and sky
MIN_SATURATION = 40


@dataclass(frozen=True)
class Located:
    """The product in one frame: its box (source pixels) and outline, how sure, and by which evidence."""

    box: Box | None
    confidence: float
    method: str  # "features", "colour", "silhouette", "followed" or "none"
    quad: tuple[tuple[float, float], ...] = ()
    #: by features: the part of the main image seen again in this frame (main-image pixels at TEMPLATE_SIDE),
    #: and the homography (row-major 3×3) taking main-image pixels to the source's; whole_boxes places the
    #: product with them where an occluder hides part of it
    seen: Box | None = None
    homography: tuple[float, ...] = ()
    #: by features, where the product's own pixels in the main image are known (a studio shot's foreground, a
    #: clean cut, a scene's part): their bounds, in the same pixels as seen; whole_boxes completes the box to
    #: them where an occluder hides part of the product in every frame
    whole: Box | None = None


NOT_FOUND = Located(None, 0.0, "none")


def _foreground(image: np.ndarray) -> np.ndarray:
    """The main image's product pixels: those unlike its studio background, or every pixel when the border is
    not plain (its colours spread from their median by more than a studio backdrop's)."""
    border = image[_border(image)].astype(np.float32)
    spread = float(np.median(np.abs(border - np.median(border, axis=0)).max(axis=1)))
    if spread > BACKDROP_LEVEL:  # a photo to its edges: no studio background to remove
        return np.full(image.shape[:2], 255, np.uint8)
    mask = (unlike_backdrop(image) > BACKDROP_LEVEL).astype(np.uint8) * 255
    return mask if mask.mean() > 255 * 0.02 else np.full(image.shape[:2], 255, np.uint8)


def _border(image: np.ndarray) -> np.ndarray:
    """The image's outermost rows and columns, as a mask."""
    edge = np.zeros(image.shape[:2], bool)
    edge[[0, -1], :] = edge[:, [0, -1]] = True
    return edge


def unlike_backdrop(image: np.ndarray) -> np.ndarray:
    """How far each pixel's colour is from a studio backdrop fitted to the image's border (the largest channel's
    difference, 0-255)."""
    return np.asarray(np.abs(image.astype(np.float32) - _backdrop(image, _border(image))).max(axis=2))


#: a pixel of a studio shot is the product's where a channel differs from the backdrop by more than this
BACKDROP_LEVEL = 24


def _backdrop(image: np.ndarray, edge: np.ndarray) -> np.ndarray:
    """A studio backdrop's colour at every pixel, fitted to the border's pixels as a quadratic surface per
    channel, then refitted on the border pixels it explains (the product may reach the border): a backdrop lit
    from one side darkens across the frame, and against its median colour the far corners stood out as
    product (skimage's clock photo: a third of its foreground was backdrop)."""
    h, w = image.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    x, y = xs / w - 0.5, ys / h - 0.5
    terms = np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=-1)
    known, colours = terms[edge], image[edge].astype(np.float32)
    explained = np.ones(len(known), bool)
    for _ in range(2):
        fit, *_ = np.linalg.lstsq(known[explained], colours[explained], rcond=None)
        explained = np.abs(colours - known @ fit).max(axis=1) <= BACKDROP_LEVEL
    return np.asarray(terms @ fit, np.float32)


#: a photo to its edges is cut by GrabCut at this long side, from a rectangle this share of it in from every
#: edge (what the photo is of is inside; its surroundings reach the edges)
CUT_SIDE = 160
CUT_INSET = 0.05
#: a cut is clean, and its pixels the product's, when its largest part holds this share of it, is one solid
#: blob (this share of its convex hull: a scene of many things, such as a toy among a shelf's things, cuts
#: ragged, a single object nearly solid) and covers a share of the photo between
#: these (a close-up's cut is a feature of it, such as a cat's eyes)
CUT_JOINED = 0.9
CUT_SOLIDITY = 0.85
CUT_AREA = (0.1, 0.9)


def cut_out(image: np.ndarray) -> np.ndarray | None:
    """The product's pixels (0/255) in a photo that runs to its edges, where they cut out cleanly (GrabCut);
    None where they do not."""
    scale = min(1.0, CUT_SIDE / max(image.shape[:2]))
    small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    h, w = small.shape[:2]
    inset = max(2, round(CUT_INSET * max(h, w)))
    if w <= 4 * inset or h <= 4 * inset:
        return None
    labels = np.zeros((h, w), np.uint8)
    # GrabCut seeds its colour models at random: a photo must cut the same way in every worker
    cv2.setRNGSeed(0)
    cv2.grabCut(
        cv2.cvtColor(small, cv2.COLOR_RGB2BGR), labels, (inset, inset, w - 2 * inset, h - 2 * inset),
        np.zeros((1, 65)), np.zeros((1, 65)), 5, cv2.GC_INIT_WITH_RECT,
    )  # fmt: skip
    cut = ((labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)).astype(np.uint8)
    count, parts, stats, _ = cv2.connectedComponentsWithStats(cut)
    if count < 2 or not CUT_AREA[0] <= float(cut.mean()) <= CUT_AREA[1]:
        return None
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    blob = (parts == largest).astype(np.uint8)
    contours, _ = cv2.findContours(blob, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    hull = cv2.contourArea(cv2.convexHull(max(contours, key=cv2.contourArea)))
    area = int(stats[largest, cv2.CC_STAT_AREA])
    if area < CUT_JOINED * int(cut.sum()) or area < CUT_SOLIDITY * hull:
        return None
    return np.asarray(
        cv2.resize(blob * 255, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_NEAREST), np.uint8
    )


#: the lights (a gain per channel) a product's colours are also looked for under, where they are not found as its
#: photo shows them: warmer and cooler (red against blue), greener and redder
LIGHTS = tuple((warm, green, 1 / warm) for warm in (0.87, 1.0, 1.15) for green in (0.9, 1.0, 1.1))


#: stronger lights, each looked for on its own (the union of their colours runs into the background: an apple's
#: reds under every one of them are also a face's and a brick wall's), where LIGHTS find nothing: a teal toy in
#: green or blue light. A blob found under one must look much like the product (STRONG_NCC): at LOOK_NCC, faces
#: and walls of an apple's shifted hues pass for it
STRONG_LIGHTS = tuple(
    (warm, green, 1 / warm)
    for warm in (0.8, 1.0, 1.25)
    for green in (0.83, 1.0, 1.2)
    if (warm, green) != (1, 1)
)
STRONG_NCC = 0.6
STRONG_SCALE = 0.5
#: green casts stronger still (green 1.4 times the other two channels together, from warmer to cooler), under
#: which a product whose colours are not skin's is looked for as the frame's one blob of them: lit apart from its
#: scene, a teal toy turns green and looks too little like its photo for STRONG_NCC. The strong lights are not
#: searched for one blob so: under their shifts of hue a background (a purple sky) can be the frame's one blob
CAST_LIGHTS = tuple((warm, 1.4, 1 / warm) for warm in (0.8, 0.9, 1.0, 1.12, 1.25))


def _relit(image: np.ndarray, light: tuple[float, float, float]) -> np.ndarray:
    return np.clip(image.astype(np.float32) * np.array(light, np.float32), 0, 255).astype(np.uint8)


def _histogram(images: Sequence[np.ndarray], own: np.ndarray) -> np.ndarray:
    """The hue-saturation histogram (30 × 32 bins, peak 255) of the own pixels (a 0/255 mask) of RGB images."""
    hist = sum(
        cv2.calcHist([cv2.cvtColor(image, cv2.COLOR_RGB2HSV)], [0, 1], own, [30, 32], [0, 180, 0, 256])
        for image in images
    )
    return np.asarray(hist * (255.0 / max(float(np.max(hist)), 1e-6)), np.float32)


#: a frame's keypoints: their positions (frame pixels) and ORB descriptors
_Keys = tuple[np.ndarray, np.ndarray]


def _grey(frame: np.ndarray) -> np.ndarray:
    return np.asarray(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY))


def _keypoints(grey: np.ndarray, orb: cv2.ORB, scale: float) -> _Keys | None:
    """The keypoints of grey, the frame scaled by scale, at their places in the frame (None: too few to match)."""
    keypoints, descriptors = orb.detectAndCompute(grey, None)
    if descriptors is None or len(keypoints) < MIN_INLIERS:
        return None
    return np.array([k.pt for k in keypoints], np.float32).reshape(-1, 2) / scale, descriptors


#: a scene is split into its parts by its colours: clustered (k-means in Lab, SCENE_COLOURS clusters) at
#: SCENE_SIDE a side, each cluster's connected regions a part where it is one solid thing (CUT_SOLIDITY of its
#: convex hull) of a share of the photo between SCENE_AREA, touching at most one of its edges (a wall, a
#: table or a cloth behind the product runs off the photo on two sides or more), whose colours are its own:
#: at least SCENE_OWN of the photo's match to its hue-saturation histogram lies in it (a teal toy among
#: letters, a shell and a box, 0.92; patches of a cat's fur, whose colours are all over the photo, 0.31 at
#: most, and found as readily on a street's browns); at most SCENE_PARTS, the largest
SCENE_SIDE = 160
SCENE_COLOURS = 8
SCENE_AREA = (0.01, 0.4)
SCENE_OWN = 0.6
SCENE_PARTS = 8
#: samples of a run a scene's part must be found in before it is taken for the product
DISCOVERED_SAMPLES = 3


def scene_parts(photo: np.ndarray) -> list[np.ndarray]:
    """The things a scene (an RGB photo) shows, each as its pixels (0/255 at the photo's size), largest first."""
    scale = SCENE_SIDE / max(photo.shape[:2])
    small = cv2.GaussianBlur(
        cv2.resize(photo, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA), (0, 0), 1.0
    )
    lab = cv2.cvtColor(small, cv2.COLOR_RGB2LAB).reshape(-1, 3).astype(np.float32)
    # k-means starts at random: a photo must split the same way in every worker
    cv2.setRNGSeed(0)
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 20, 1.0)
    _, labels, _ = cv2.kmeans(lab, SCENE_COLOURS, None, criteria, 3, cv2.KMEANS_PP_CENTERS)  # type: ignore[call-overload]
    labels = labels.reshape(small.shape[:2])
    h, w = labels.shape
    parts: list[tuple[int, np.ndarray]] = []
    for colour in range(SCENE_COLOURS):
        cluster = (labels == colour).astype(np.uint8)
        cluster = cv2.morphologyEx(cluster, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        cluster = cv2.morphologyEx(cluster, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        count, regions, stats, _ = cv2.connectedComponentsWithStats(cluster)
        for k in range(1, count):
            x, y, bw, bh, area = (int(v) for v in stats[k])
            edges = (x == 0) + (y == 0) + (x + bw == w) + (y + bh == h)
            if not SCENE_AREA[0] <= area / (h * w) <= SCENE_AREA[1] or edges > 1:
                continue
            region = (regions == k).astype(np.uint8)
            contours, _ = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
            solid = area >= CUT_SOLIDITY * cv2.contourArea(cv2.convexHull(max(contours, key=cv2.contourArea)))
            if solid and _own_colours(small, region) >= SCENE_OWN:
                parts.append((area, region))
    parts.sort(key=lambda part: -part[0])
    size = (photo.shape[1], photo.shape[0])
    return [
        np.asarray(cv2.resize(region * 255, size, interpolation=cv2.INTER_NEAREST), np.uint8)
        for _, region in parts[:SCENE_PARTS]
    ]


def _own_colours(photo: np.ndarray, region: np.ndarray) -> float:
    """The share of an RGB photo's match to a region's (0/1) hue-saturation histogram that lies in the region."""
    hsv = cv2.cvtColor(photo, cv2.COLOR_RGB2HSV)
    matched = cv2.calcBackProject([hsv], [0, 1], _histogram([photo], region), [0, 180, 0, 256], 1)
    return float(matched[region > 0].sum()) / max(float(matched.sum()), 1.0)


def _part_transform(photo: np.ndarray, part: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The transform (3×3) from the pixels of a part's locator (the photo cut to the part, at most
    TEMPLATE_SIDE a side) to those of the photo's own (the whole photo, shape)."""
    ys, xs = _own_bounds(part)
    inner = min(1.0, TEMPLATE_SIDE / max(ys.stop - ys.start, xs.stop - xs.start))
    outer = shape[1] / photo.shape[1]
    k = outer / inner
    return np.array([[k, 0.0, xs.start * outer], [0.0, k, ys.start * outer], [0.0, 0.0, 1.0]])


def _in_photo(found: Located, transform: np.ndarray) -> Located:
    """A part's find, its part of the main image seen and homography the whole photo's (transform: from the
    part's locator's pixels to the photo's)."""
    if found.seen is None or not found.homography:
        return found
    homography = np.array(found.homography).reshape(3, 3) @ np.linalg.inv(transform)
    return Located(
        found.box,
        found.confidence,
        found.method,
        found.quad,
        _mapped(found.seen, transform[:2]),
        tuple(float(v) for v in homography.ravel()),
        None if found.whole is None else _mapped(found.whole, transform[:2]),
    )


class ProductLocator:
    """Built once per item from its main image (RGB); `locate` per analysed frame. own: the product's pixels
    in the image (0/255), where they are known otherwise (one of the parts of a scene, see scene_parts)."""

    def __init__(self, main_image: np.ndarray, own: np.ndarray | None = None) -> None:
        if own is not None:
            bounds = _own_bounds(own)
            main_image, own = main_image[bounds], own[bounds]
        scale = min(1.0, TEMPLATE_SIDE / max(main_image.shape[:2]))
        image = (
            cv2.resize(main_image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
            if scale < 1
            else main_image
        )
        self._image = np.ascontiguousarray(image)
        self._mask = (
            _foreground(image)
            if own is None
            else cv2.resize(own, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_NEAREST)
        )
        #: a studio shot (a plain background, removed), or a part of a scene: only its foreground is the product
        self._studio = own is not None or bool(self._mask.min() == 0)
        self._orb = cv2.ORB_create(nfeatures=MAX_KEYPOINTS, scaleFactor=1.2, nlevels=8)  # type: ignore[attr-defined]
        grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        keypoints, descriptors = self._orb.detectAndCompute(grey, self._mask)
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
        self._corners = self._outline(self._mask)
        #: the product's own pixels, whose colours are evidence of it: a studio shot's foreground, or a plain
        #: product cut cleanly out of a photo to its edges (None where neither: the photo's colours are its
        #: surroundings' too); the features keep the whole photo, which a cut gone wrong cannot take from them
        self._own: np.ndarray | None = self._mask if self._studio else cut_out(image)
        self._look = None if self._own is None else _look_of(image, self._own)
        #: the main image's pixels that may agree with a frame where the product is seen again: its own pixels
        #: and a rim round them (OWN_RIM) where they are known, as a photo's surroundings (a road, a dark hill)
        #: agree with any plain or dark stretch of the frame round the product and stretched its box; else all
        self._agreeable = self._mask if self._own is None else _grown_by(self._own, OWN_RIM)
        self._unlike_skin = self._own is not None and _skin_share(image, self._own) <= SKIN_SHARE
        self._whole: Box | None = None
        if self._own is not None:
            ys, xs = _own_bounds(self._own)
            # own pixels that fill their bounds are a picture, not a thing's outline: a plain border round a
            # whole scene, of which the video may show one thing only (a box's front fills them too, and its
            # print is seen whole often enough)
            if float(self._own[ys, xs].mean()) < WHOLE_FILL * 255:
                self._whole = (float(xs.start), float(ys.start), float(xs.stop), float(ys.stop))
        hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)
        own = self._mask if self._own is None else self._own
        self._colourful = float(np.median(hsv[..., 1][own > 0])) >= MIN_SATURATION
        #: the product's colours (a hue-saturation histogram, 0-255) as its photo shows them, then, for a plain
        #: colourful product (whose colours are its evidence), under LIGHTS
        self._hists = [_histogram([image], own)]
        #: and one for each of STRONG_LIGHTS, looked for one at a time where none of those finds it
        self._strong: list[np.ndarray] = []
        #: and for each of CAST_LIGHTS, for a plain colourful product unlike skin
        self._cast: list[np.ndarray] = []
        if not self.textured and self._colourful:
            self._hists.append(_histogram([_relit(image, light) for light in LIGHTS], own))
            self._strong = [_histogram([_relit(image, light)], own) for light in STRONG_LIGHTS]
            if self._unlike_skin:
                self._cast = [_histogram([_relit(image, light)], own) for light in CAST_LIGHTS]
        #: a plain grey product has neither keypoints nor colours to go by, only its outline (its own pixels,
        #: 0/1, in their bounding box), set against a ring round it at a few sizes per frame size (the
        #: templates, built once for each size of frame the videos have)
        self._silhouette = (
            (self._own[_own_bounds(self._own)] > 0).astype(np.float32)
            if self._own is not None and not self.textured and not self._colourful
            else None
        )
        self._rings: dict[tuple[int, int], list[_Ring]] = {}
        #: a photo that runs to its edges and does not cut out cleanly is a scene the product is one part of:
        #: the photo, and its parts' locators with the transform (3×3) from a part's pixels to this one's
        #: (built when a run of samples first needs them, see _discovered)
        self._scene: np.ndarray | None = main_image if self._own is None else None
        self._parts: list[tuple[ProductLocator, np.ndarray]] | None = None
        self._matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
        self._fine_orb = cv2.ORB_create(nfeatures=MAX_KEYPOINTS, scaleFactor=1.2, nlevels=FINE_LEVELS)  # type: ignore[attr-defined]

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
        shrunk = cv2.copyMakeBorder(shrunk, SMALL_PAD, SMALL_PAD, SMALL_PAD, SMALL_PAD, cv2.BORDER_REPLICATE)
        mask = cv2.copyMakeBorder(
            mask, SMALL_PAD, SMALL_PAD, SMALL_PAD, SMALL_PAD, cv2.BORDER_CONSTANT, value=0
        )
        orb = cv2.ORB_create(nfeatures=300, scaleFactor=1.2, nlevels=2, edgeThreshold=15)  # type: ignore[attr-defined]
        keypoints, descriptors = orb.detectAndCompute(shrunk, mask)
        points = (np.array([k.pt for k in keypoints], np.float32).reshape(-1, 2) - SMALL_PAD) / small
        return points, descriptors

    @property
    def textured(self) -> bool:
        """Whether the product has enough keypoints for its features to be the evidence."""
        return bool(self._templates) and len(self._templates[0][0]) >= MIN_TEMPLATE_KEYPOINTS

    @property
    def colourful(self) -> bool:
        """Whether the product's colours are evidence of it (MIN_SATURATION)."""
        return self._colourful

    @staticmethod
    def _outline(mask: np.ndarray) -> np.ndarray:
        ys, xs = np.nonzero(mask)
        x0, y0, x1, y1 = float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)
        return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32).reshape(-1, 1, 2)

    def locate(self, frame: np.ndarray, source_size: tuple[int, int], *, fine: bool = True) -> Located:
        """The product in an RGB frame of the source (any size), its box scaled to source_size (width, height);
        fine: where the frame's features find nothing, those of the frame scaled up are searched too."""
        return self._located(_at_locate_side(frame), source_size, fine, None)

    def locate_all(self, frames: Sequence[np.ndarray], source_size: tuple[int, int]) -> list[Located]:
        """The product in a run of samples (RGB, in time order), each located on its own; the frame scaled up
        is searched on every FINE_EVERY-th sample where nothing was found, and outwards from each sample that
        search finds the product in, while it keeps finding it: a product seen small stays on screen for
        seconds, and most samples where nothing is found are of other scenes, where the search finds nothing
        at twice the cost of the rest. Where the main image is a scene and nothing is found in any sample, the
        part of it the samples show is the product (_discovered)."""
        scaled = [_at_locate_side(frame) for frame in frames]
        keys = [_keypoints(_grey(frame), self._orb, 1.0) if self.textured else None for frame in scaled]
        found = [self._located(frame, source_size, False, k) for frame, k in zip(scaled, keys, strict=True)]
        if self.textured:
            self._search_finer(scaled, found, source_size)
        if self._scene is not None and all(f.box is None for f in found):
            if not self.textured:
                keys = [_keypoints(_grey(frame), self._orb, 1.0) for frame in scaled]
            return self._discovered(scaled, keys, source_size) or found
        return found

    def _search_finer(
        self, scaled: Sequence[np.ndarray], found: list[Located], size: tuple[int, int]
    ) -> None:
        """locate_all's search of the frames scaled up, into found."""
        tried = [f.box is not None for f in found]

        def search(k: int) -> bool:
            tried[k] = True
            frame = scaled[k]
            found[k] = _in_source(self._fine(frame, _grey(frame)), frame.shape, size)
            return found[k].box is not None

        for k in range(0, len(scaled), FINE_EVERY):
            if tried[k] or not search(k):
                continue
            for step in (-1, 1):
                j = k + step
                while 0 <= j < len(scaled) and not tried[j] and search(j):
                    j += step

    def _discovered(
        self, scaled: Sequence[np.ndarray], keys: Sequence[_Keys | None], size: tuple[int, int]
    ) -> list[Located] | None:
        """The product in samples at LOCATE_SIDE (with their keypoints) where the main image is a scene: the
        part of it (scene_parts) found in the most samples, at least DISCOVERED_SAMPLES; None where no part is.
        A seller's photo of the product among other things (a toy on a shelf) shows it whole nowhere in a
        video of the product alone; which of its things the product is, the video says. Found by a part, the
        find's outline and homography are the main image's (so whole_boxes completes it as any other)."""
        assert self._scene is not None
        if self._parts is None:
            self._parts = [
                (ProductLocator(self._scene, part), _part_transform(self._scene, part, self._image.shape))
                for part in scene_parts(self._scene)
            ]
        best: tuple[int, float, list[Located], np.ndarray] | None = None
        for part, transform in self._parts:
            finds = [part._located(frame, size, False, k) for frame, k in zip(scaled, keys, strict=True)]
            count = sum(f.box is not None for f in finds)
            confidence = sum(f.confidence for f in finds)
            if count >= DISCOVERED_SAMPLES and (best is None or (count, confidence) > best[:2]):
                best = (count, confidence, finds, transform)
        if best is None:
            return None
        return [_in_photo(f, best[3]) for f in best[2]]

    def _located(
        self, frame: np.ndarray, source_size: tuple[int, int], fine: bool, keys: _Keys | None
    ) -> Located:
        """locate, on a frame already at LOCATE_SIDE (keys: its keypoints, if already found)."""
        found = self._by_features(frame, fine, keys) if self.textured else None
        if found is None and self.colourful and self._look is not None:
            found = self._by_colour(frame, looked=True)
        if found is None and self._silhouette is not None:
            found = self._by_silhouette(frame)
        return _in_source(found, frame.shape, source_size)

    def _by_features(self, frame: np.ndarray, fine: bool, keys: _Keys | None) -> Located | None:
        grey = _grey(frame)
        found = self._features_at(frame, keys if keys is not None else _keypoints(grey, self._orb, 1.0))
        return self._fine(frame, grey) if found is None and fine else found

    def _fine(self, frame: np.ndarray, grey: np.ndarray) -> Located | None:
        """The product by the keypoints of the frame (grey: its grey) scaled up FINE_SCALE times."""
        fine = cv2.resize(grey, None, fx=FINE_SCALE, fy=FINE_SCALE, interpolation=cv2.INTER_LINEAR)
        return self._features_at(frame, _keypoints(fine, self._fine_orb, FINE_SCALE))

    def _features_at(self, frame: np.ndarray, keys: _Keys | None) -> Located | None:
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
        gain = np.clip(
            np.median(seen[ys, xs] / np.maximum(shown[ys, xs], 8.0), axis=0), 1 / MAX_GAIN, MAX_GAIN
        )
        differs = np.abs(seen - shown * gain).max(axis=2)
        agree = ((differs < AGREE_LEVEL) & (valid > 0)).astype(np.uint8)
        agree = cv2.morphologyEx(agree, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        _, labels, stats, _ = cv2.connectedComponentsWithStats(agree)
        joined = set(labels[ys, xs].tolist()) - {0}
        if self._studio:
            # inside a studio shot's outline every agreeing pixel is the product's: a part that an occluder
            # cuts off from the keypoints counts too, when it is no speck
            least = SPLIT_SHARE * sum(int(stats[label, cv2.CC_STAT_AREA]) for label in joined)
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
        ys, xs = np.nonzero(region)
        stride = max(1, len(xs) // IN_IMAGE_POINTS)
        mapped = [
            cv2.perspectiveTransform(points.reshape(-1, 1, 2).astype(np.float32), from_frame).reshape(-1, 2)
        ]
        if len(xs):
            roi = np.stack([xs[::stride], ys[::stride]], axis=1).astype(np.float32) + 0.5
            mapped.append(cv2.perspectiveTransform(roi.reshape(-1, 1, 2), from_roi).reshape(-1, 2))
        at = np.concatenate(mapped)
        corners = self._corners.reshape(-1, 2)
        (x0, y0), (x1, y1) = (
            np.maximum(at.min(axis=0), corners.min(axis=0)),
            np.minimum(at.max(axis=0), corners.max(axis=0)),
        )
        return (float(x0), float(y0), float(x1), float(y1)) if x1 > x0 and y1 > y0 else None

    def colour_near(self, frame: np.ndarray, source_size: tuple[int, int], near: Box) -> Box | None:
        """The blob of the product's colours that overlaps near (a box other evidence gives, source pixels) in an
        RGB frame of the source, in source pixels; None where the product's own pixels are unknown or no such
        blob is there that looks like the product's own pixels (LOOK_NCC). A plain product's colours alone are
        no evidence where its photo runs to its edges (an apple's reds are a face's too: by hue and saturation
        the two are as alike as two views of the apple), but where the template's match says the product is,
        they give its extent better than the match's box, which is the whole photo's at one of a few fixed
        scales. Only where the blob looks like the product: the match's box also overlaps what stands next to
        the product, and a re-lit apple's colours were the face beside it, not the apple (bench/quality.py's
        development half, an apple's samples through this path: boxes holding 90 % of it 121 → 127 of 260,
        over 1.5 times its area 10 → 6; where no blob looks like it, the match's box stands). The blob is not
        grown here: the match has placed the product, the blob only sizes it."""
        if self._look is None:
            return None
        frame = _at_locate_side(frame)
        sx, sy = frame.shape[1] / source_size[0], frame.shape[0] / source_size[1]
        found = self._by_colour(frame, scale_box(near, sx, sy))
        if found is None or found.box is None or _likeness(self._look, frame, found.box) < LOOK_NCC:
            return None
        return scale_box(found.box, 1 / sx, 1 / sy)

    def _by_colour(self, frame: np.ndarray, near: Box | None = None, looked: bool = False) -> Located | None:
        """The largest blob of the product's colours in the frame, or the largest overlapping near; looked,
        only a blob that looks like the product's own pixels (grown while that makes it look more like them),
        and for a plain product, where none does, one of its colours under other lights that does; where nothing
        looks like it, for a product whose colours are not skin's, the frame's one blob of them (_blob's alone),
        under LIGHTS, then under each of CAST_LIGHTS."""
        hsv = cv2.cvtColor(frame, cv2.COLOR_RGB2HSV)
        matches = []
        for hist in self._hists if looked else self._hists[:1]:
            matches.append(_matches(hsv, hist))
            if (found := self._blob(frame, matches[-1], near, looked)) is not None:
                return found
        if not looked:
            return None
        # each strong light is a search of its own, on the frame at STRONG_SCALE: blobs need no more pixels
        if self._strong:
            small = cv2.resize(frame, None, fx=STRONG_SCALE, fy=STRONG_SCALE, interpolation=cv2.INTER_AREA)
            small_hsv = cv2.cvtColor(small, cv2.COLOR_RGB2HSV)
            strong = [_matches(small_hsv, hist) for hist in self._strong]
            if (found := self._under_strong_light(small, strong)) is not None:
                return found
        if not self._unlike_skin:
            return None
        # the widest colours first: a blob of them under other lights holds more of the product
        for matched in reversed(matches):
            if (found := self._blob(frame, matched, near, looked, alone=True)) is not None:
                return found
        # a plain product's lone blob under a green cast (its frame's small copy made for the strong lights)
        if self._cast:
            cast = [_matches(small_hsv, hist) for hist in self._cast]
            return self._under_strong_light(small, cast, alone=True)
        return None

    def _under_strong_light(
        self, small: np.ndarray, lit: Sequence[_Matches], alone: bool = False
    ) -> Located | None:
        """A blob of the product's colours under one of a few strong lights (lit: the matches of each, in the
        frame at STRONG_SCALE, small) that looks much like it (STRONG_NCC), or, alone, the frame's one blob of
        them (as _blob's alone); its box in the frame's pixels."""
        for matched in lit:
            found = self._blob(small, matched, None, True, 0.0 if alone else STRONG_NCC, alone)
            if found is not None and found.box is not None:
                box = scale_box(found.box, 1 / STRONG_SCALE, 1 / STRONG_SCALE)
                return Located(box, found.confidence, found.method)
        return None

    def _blob(
        self,
        frame: np.ndarray,
        matches: _Matches,
        near: Box | None,
        looked: bool,
        least: float = 0.0,
        alone: bool = False,
    ) -> Located | None:
        """_by_colour, for the frame's pixels of one histogram of the product's colours; a looked blob must look at
        least `least` like the product too; alone, only the largest blob, where it holds nearly all of those
        pixels (DISTINCT_SHARE), and it need look only a little like the product (DISTINCT_NCC)."""
        projected, labels, stats = matches.projected, matches.labels, matches.stats
        # component 0 is the background
        boxes = {
            k: (float(x), float(y), float(x + w), float(y + h))
            for k, (x, y, w, h, _) in enumerate(stats[1:], start=1)
        }
        blobs = sorted(
            (k for k, box in boxes.items() if near is None or iou(box, near) > 0),
            key=lambda k: -int(stats[k, cv2.CC_STAT_AREA]),
        )
        frame_area = frame.shape[0] * frame.shape[1]
        # unlooked, the largest blob is the product's; looked, the largest that looks like it: a face or a wall
        # of the product's hues is often larger than the product beside it, and a smaller blob needs to look
        # more like it (LOOK_NCC_SMALLER)
        ranks = LOOKED_BLOBS if looked and self._look is not None and not alone else 1
        for rank, best in enumerate(blobs[:ranks]):
            _, _, w, h, area = (int(v) for v in stats[best])
            if area < frame_area * 0.003 or area < 0.3 * w * h:
                continue
            # a blob over most of the frame is a background of the product's colours, unless it looks like the
            # product: held up close, a product fills most of the frame (a close-up apple or whale), and a
            # background rarely looks like it
            if w * h > frame_area * BACKGROUND_SHARE and not (looked and self._look is not None):
                continue
            if alone and area < DISTINCT_SHARE * matches.pixels:
                continue
            box = boxes[best]
            if looked and self._look is not None:
                box, likeness = _grown_to_look(self._look, frame, projected, box)
                needed = DISTINCT_NCC if alone else (LOOK_NCC if rank == 0 else LOOK_NCC_SMALLER)
                if likeness < max(least, needed):
                    continue
                # a blob that looks like the product may have a hand of its hues joined to it: where the part
                # round its core looks more like the product, that part is the product
                core = _around_core(projected, labels, best, boxes[best])
                if core != boxes[best]:
                    core, core_likeness = _grown_to_look(self._look, frame, projected, core)
                    if core_likeness > likeness:
                        box = core
            return Located(box, 0.3 * min(1.0, area / (w * h)), "colour")
        return None

    def _by_silhouette(self, frame: np.ndarray) -> Located | None:
        """Where a plain product's silhouette stands out from the pixels round it in an RGB frame, at one of a
        few sizes: a grey or dark product held against a wall differs from it in brightness, over the shape of
        the product. Upright only: turned in the hand, a round or cylindrical product keeps its outline."""
        assert self._silhouette is not None
        scale = SILHOUETTE_SIDE / max(frame.shape[:2])
        small = cv2.resize(frame, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        grey = cv2.cvtColor(small, cv2.COLOR_RGB2GRAY).astype(np.float32)
        rings = self._rings.get(grey.shape[:2])
        if rings is None:
            rings = self._rings[grey.shape[:2]] = _rings(self._silhouette, *grey.shape[:2])
        return _standing_out(rings, grey, scale)


#: a blob of the product's colours is the product when its pixels, scaled to LOOK_SIDE a side, correlate with
#: the product's own by at least LOOK_NCC (colour channels together, over the product's pixels): the colours
#: of a red apple are a face's, a brick wall's and a red sign's too, but its shading is not: such blobs correlate
#: less than LOOK_NCC with the apple's own pixels, the apple's own blobs mostly well above it
LOOK_SIDE = 32
LOOK_NCC = 0.45
#: a blob of the product's colours whose box covers more than this share of the frame is a background, unless
#: it looks like the product
BACKGROUND_SHARE = 0.6
#: blobs of the product's colours, largest first, whose look is compared with the product's in a frame; one
#: smaller than the largest is the product where it looks this much like it: an orange beside a face of its
#: hues looks well above this, slices of faces and walls beside larger blobs below it
LOOKED_BLOBS = 3
LOOK_NCC_SMALLER = 0.7
#: a product whose colours are not skin's is the frame's one blob of its colours where no blob of them looks like
#: it: the largest holding this share of the frame's pixels of them, and correlating with the product's own
#: pixels at least DISTINCT_NCC (not against them). Turned, tilted far back and half covered, a teal toy looks
#: little like its photo even where its blob is the whole toy, hence the low correlation asked; a hand or a face
#: is what brings a second blob of a product's hues into most frames, and for a product of skin's colours (an
#: apple, an orange) its blob alone would be a face as often as the product
DISTINCT_SHARE = 0.9
DISTINCT_NCC = 0.1
#: skin's range of chroma (Cr, Cb of YCrCb, 0-255), the classic rule of thumb for skin of every tone (Chai and
#: Ngan, 1999); a product is unlike skin where at most SKIN_SHARE of its own pixels lie in it (an apple 0.6, an
#: orange 0.39, a teal toy 0.0, a black car 0.03)
SKIN_CR = (133, 173)
SKIN_CB = (77, 127)
SKIN_SHARE = 0.1

#: the rim round a product's own pixels that may still agree with a frame, as a share of their size (the square
#: root of their area): a cut's edge lies a few pixels off the product's, and a frame's edges are blurred
OWN_RIM = 0.1


#: a blob's core: its pixels whose colours match the product's histogram this strongly (of 255); a hand or a
#: face of the product's hues joins its blob at the weaker levels, not at this one
CORE_MATCH = 192
#: a core is trusted where it holds this share of its blob's pixels at least
CORE_SHARE = 0.1
#: the blob's pixels within this share of the core's size (the square root of its area) of it are the product's
CORE_REACH = 0.3
#: core parts under this share of the core are specks
CORE_SPECK = 0.05


def _grown_by(mask: np.ndarray, share: float) -> np.ndarray:
    """A mask (uint8, set where non-zero) grown on every side by share of its size (the square root of its
    area)."""
    reach = max(1, round(share * math.sqrt(float(np.count_nonzero(mask)))))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1))
    return np.asarray(cv2.dilate(mask, kernel), np.uint8)


def _around_core(projected: np.ndarray, labels: np.ndarray, label: int, box: Box) -> Box:
    """The box of a blob's pixels near its core (CORE_MATCH), or the blob's box where it has too little core."""
    x0, y0, x1, y1 = (int(v) for v in box)
    own = labels[y0:y1, x0:x1] == label
    core = own & (projected[y0:y1, x0:x1] >= CORE_MATCH)
    count = int(core.sum())
    if count < CORE_SHARE * int(own.sum()):
        return box
    # specks of the core (a few strongly matching pixels of a hand) are no core
    parts, part_labels, part_stats, _ = cv2.connectedComponentsWithStats(core.astype(np.uint8))
    kept = [k for k in range(1, parts) if part_stats[k, cv2.CC_STAT_AREA] >= CORE_SPECK * count]
    if not kept:
        return box
    core = np.isin(part_labels, kept)
    ys, xs = _own_bounds(own & (_grown_by(core.astype(np.uint8), CORE_REACH) > 0))
    return (float(x0 + xs.start), float(y0 + ys.start), float(x0 + xs.stop), float(y0 + ys.stop))


@dataclass(frozen=True)
class _Matches:
    """A frame's pixels of the product's colours (one histogram of them): the back-projection, smoothed, its
    blobs (those at 96 or more: labels and stats as cv2.connectedComponentsWithStats gives them) and their
    number of pixels."""

    projected: np.ndarray
    labels: np.ndarray
    stats: np.ndarray
    pixels: int


def _matches(hsv: np.ndarray, hist: np.ndarray) -> _Matches:
    projected = cv2.calcBackProject([hsv], [0, 1], hist, [0, 180, 0, 256], 1)
    projected = cv2.GaussianBlur(projected, (0, 0), 2.0)
    _, blob = cv2.threshold(projected, 96, 255, cv2.THRESH_BINARY)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(blob)
    return _Matches(projected, labels, stats, int(np.count_nonzero(blob)))


def _skin_share(image: np.ndarray, own: np.ndarray) -> float:
    """The share of a product's own pixels (an RGB image's, where own is 255) in skin's range of chroma."""
    ycrcb = cv2.cvtColor(image, cv2.COLOR_RGB2YCrCb)[own > 0]
    cr, cb = ycrcb[:, 1], ycrcb[:, 2]
    skin = (cr >= SKIN_CR[0]) & (cr <= SKIN_CR[1]) & (cb >= SKIN_CB[0]) & (cb <= SKIN_CB[1])
    return float(skin.mean()) if len(skin) else 1.0


def _own_bounds(own: np.ndarray) -> tuple[slice, slice]:
    """The rows and columns of the bounding box of a product's own pixels (a 0/255 mask)."""
    x, y, w, h = cv2.boundingRect((own > 0).astype(np.uint8))
    return slice(y, y + h), slice(x, x + w)


def _look_of(image: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The product's own pixels at LOOK_SIDE a side, and which of them are the product's."""
    bounds = _own_bounds(own)
    side = (LOOK_SIDE, LOOK_SIDE)
    pixels = cv2.resize(image[bounds], side, interpolation=cv2.INTER_AREA)
    return pixels.astype(np.float32), cv2.resize(own[bounds], side, interpolation=cv2.INTER_NEAREST) > 0


def _likeness(look: tuple[np.ndarray, np.ndarray], frame: np.ndarray, box: Box) -> float:
    """Normalised cross-correlation of the product's look with the frame's pixels in box."""
    pixels, mask = look
    x0, y0, x1, y1 = (round(v) for v in box)
    region = frame[y0 : max(y0 + 1, y1), x0 : max(x0 + 1, x1)]
    seen = cv2.resize(region, (LOOK_SIDE, LOOK_SIDE), interpolation=cv2.INTER_AREA).astype(np.float32)[mask]
    shown = pixels[mask]
    seen, shown = seen - seen.mean(axis=0), shown - shown.mean(axis=0)
    norm = math.sqrt(float((seen * seen).sum()) * float((shown * shown).sum()))
    return float((seen * shown).sum()) / norm if norm > 0 else 0.0


#: a blob grows over the pixels whose colours the product's histogram back-projects to at least this (of 255;
#: the blob itself is those at 96 or more)
FAINT_MATCH = 64


def _grown_to_look(
    look: tuple[np.ndarray, np.ndarray], frame: np.ndarray, projected: np.ndarray, box: Box
) -> tuple[Box, float]:
    """The box grown over each region of fainter colour match that it touches, one at a time, where that
    makes its pixels look more like the product's; with its likeness."""
    likeness = _likeness(look, frame, box)
    most = 0.6 * frame.shape[0] * frame.shape[1]
    _, _, stats, _ = cv2.connectedComponentsWithStats((projected >= FAINT_MATCH).astype(np.uint8))
    for x, y, w, h, _ in stats[1:]:
        region = (float(x), float(y), float(x + w), float(y + h))
        if iou(region, box) == 0 or w * h > most:
            continue
        grown = box_union(box, region)
        if (grown_likeness := _likeness(look, frame, grown)) > likeness:
            box, likeness = grown, grown_likeness
    return box, likeness


#: a plain grey product is looked for in frames this long a side, at sizes where its long side is each of these
#: shares of the frame's short side (a product held close to the camera fills the frame and runs past it)
SILHOUETTE_SIDE = 256
SILHOUETTE_SHARES = tuple(0.15 * 1.25**k for k in range(12))
#: the ring round the silhouette its pixels are set against, as a share of its long side
SILHOUETTE_RING = 0.2
#: a product held close runs past the frame's edge: its silhouette is looked for wherever at least these
#: shares of it and of its ring are on screen, over the pixels on screen; smaller shares find it no more often
#: and find it more often where it is not
SILHOUETTE_SEEN = 0.9
RING_SEEN = 0.8
#: the product is where the pixels inside its silhouette stand out from the ring round it by this much: the
#: squared difference of their means over the sum of their variances (Fisher's criterion; a mean difference
#: of 1.7 pooled standard deviations): a grey product that reaches it is almost always in the right place, and
#: a frame without the product almost never has a place that does
SILHOUETTE_CONTRAST = 2.75
#: grey levels' variance that flat pixels have anyway (sensor noise, compression): a flat wall in a flat ring
#: is no outline
SILHOUETTE_NOISE = 25.0


@dataclass(frozen=True)
class _Ring:
    """The silhouette at one size (inside, 0/1) and the ring round it (around, 0/1), in templates padded by
    pad on every side, for one size of frame: how far (rows, columns) the templates may lie past its edges, and
    at each such place how many of their pixels are on screen (at least 1) and whether enough are to count."""

    inside: np.ndarray
    around: np.ndarray
    pad: int
    reach: tuple[int, int]
    inside_seen: np.ndarray
    around_seen: np.ndarray
    counted: np.ndarray


def _rings(silhouette: np.ndarray, height: int, width: int) -> list[_Ring]:
    """The silhouette (0/1) and its ring at each of SILHOUETTE_SHARES that can be seen enough in a height×width
    frame."""
    out = []
    for share in SILHOUETTE_SHARES:
        k = share * min(height, width) / max(silhouette.shape)
        w, h = max(4, round(silhouette.shape[1] * k)), max(4, round(silhouette.shape[0] * k))
        pad = max(2, round(SILHOUETTE_RING * max(w, h)))
        inside = np.zeros((h + 2 * pad, w + 2 * pad), np.float32)
        inside[pad : pad + h, pad : pad + w] = cv2.resize(silhouette, (w, h), interpolation=cv2.INTER_NEAREST)
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * pad + 1, 2 * pad + 1))
        around = cv2.dilate(inside, kernel) - inside
        # counted where the templates lie anywhere on the frame, then only as far past its edges as that needs
        *_, anywhere = _on_screen(inside, around, (height, width), inside.shape)
        if not anywhere.any():
            break
        reach = _reach(anywhere, inside.shape, (height, width))
        out.append(_Ring(inside, around, pad, reach, *_on_screen(inside, around, (height, width), reach)))
    return out


def _on_screen(
    inside: np.ndarray, around: np.ndarray, shape: tuple[int, int], reach: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At each place of the templates in a frame of the given shape padded by reach (rows, columns): how many
    pixels of inside and of around are on screen (at least 1), and whether enough of both are to count."""
    (dy, dx), screen = reach, np.ones(shape, np.float32)
    padded = cv2.copyMakeBorder(screen, dy, dy, dx, dx, cv2.BORDER_CONSTANT)
    inside_seen = cv2.matchTemplate(padded, inside, cv2.TM_CCORR)
    around_seen = cv2.matchTemplate(padded, around, cv2.TM_CCORR)
    counted = (inside_seen >= SILHOUETTE_SEEN * inside.sum()) & (around_seen >= RING_SEEN * around.sum())
    return np.maximum(inside_seen, 1), np.maximum(around_seen, 1), counted


def _reach(counted: np.ndarray, template: tuple[int, ...], frame: tuple[int, int]) -> tuple[int, int]:
    """How far (rows, columns) past the frame's edges a template of the given shape lies at the furthest places
    counted, places in the frame padded by the template's own shape."""
    out = []
    for axis in (0, 1):
        places = np.flatnonzero(np.any(counted, axis=1 - axis))
        out.append(max(0, template[axis] - int(places[0]), int(places[-1]) - frame[axis]))
    return out[0], out[1]


def _standing_out(rings: Sequence[_Ring], grey: np.ndarray, scale: float) -> Located | None:
    """The place and size where the inside of a ring stands out most from the ring in a grey frame (float32,
    the frame scaled by scale), its box (the part on screen) in the frame's pixels; None below
    SILHOUETTE_CONTRAST."""
    if not rings:
        return None
    height, width = grey.shape
    # one frame padded for the ring reaching furthest; each ring searches its own reach of it
    top, side = (max(n) for n in zip(*(ring.reach for ring in rings), strict=True))
    padded = cv2.copyMakeBorder(grey, top, top, side, side, cv2.BORDER_CONSTANT)
    squared = padded * padded
    best: tuple[float, Box] | None = None
    for ring in rings:
        dy, dx = ring.reach
        reach = (slice(top - dy, top + height + dy), slice(side - dx, side + width + dx))
        near, near_squared = np.ascontiguousarray(padded[reach]), np.ascontiguousarray(squared[reach])
        mean_in, var_in = _moments(near, near_squared, ring.inside, ring.inside_seen)
        mean_around, var_around = _moments(near, near_squared, ring.around, ring.around_seen)
        contrast = (mean_in - mean_around) ** 2 / (var_in + var_around + SILHOUETTE_NOISE)
        contrast[~ring.counted] = 0
        _, peak, _, (x, y) = cv2.minMaxLoc(contrast)
        if best is None or peak > best[0]:
            h, w = (n - 2 * ring.pad for n in ring.inside.shape)
            left, upper = x - dx + ring.pad, y - dy + ring.pad
            on_screen = (max(0, left), max(0, upper), min(width, left + w), min(height, upper + h))
            best = (float(peak), scale_box(on_screen, 1 / scale, 1 / scale))
    if best is None or best[0] < SILHOUETTE_CONTRAST:
        return None
    peak, box = best
    return Located(box, 0.3 * min(1.0, peak / (2 * SILHOUETTE_CONTRAST)), "silhouette")


def _moments(
    grey: np.ndarray, squared: np.ndarray, mask: np.ndarray, seen: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The mean and variance of the grey levels under mask (0/1) at every place in a frame padded with zeros,
    over the pixels on screen (seen at each place)."""
    mean = cv2.matchTemplate(grey, mask, cv2.TM_CCORR) / seen
    return mean, np.maximum(cv2.matchTemplate(squared, mask, cv2.TM_CCORR) / seen - mean * mean, 0.0)


def _in_source(found: Located | None, shape: tuple[int, ...], source_size: tuple[int, int]) -> Located:
    """A find in a frame of the given shape, in source pixels (NOT_FOUND for None)."""
    if found is None or found.box is None:
        return NOT_FOUND
    sx, sy = source_size[0] / shape[1], source_size[1] / shape[0]
    to_source = np.diag([sx, sy, 1.0])
    return Located(
        scale_box(found.box, sx, sy),
        found.confidence,
        found.method,
        tuple((x * sx, y * sy) for x, y in found.quad),
        found.seen,
        tuple(float(v) for v in (to_source @ np.array(found.homography).reshape(3, 3)).ravel())
        if found.homography
        else (),
        found.whole,
    )


def _at_locate_side(frame: np.ndarray) -> np.ndarray:
    """The frame scaled to LOCATE_SIDE on its long side (unless it is within 5 % of it)."""
    scale = LOCATE_SIDE / max(frame.shape[:2])
    if abs(scale - 1) <= 0.05:
        return frame
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.resize(frame, None, fx=scale, fy=scale, interpolation=interpolation)


#: the product's extent in the main image over a video: each side at this quantile of the frames' extents,
#: towards the larger side (a frame where an occluder hides part of the product shows less of it; one
#: frame's stray agreement does not stretch every box)
WHOLE_QUANTILE = 0.8
#: the product's own pixels in its main image are its whole extent where they fill less than this share of
#: their bounds (an outline, not a rectangle)
WHOLE_FILL = 0.9
#: frames that must show the product by its features before their extents are combined
WHOLE_MIN_FRAMES = 3


class Sighting(Protocol):
    """What whole_boxes needs of a frame's find: a Located, or a record carrying its fields."""

    @property
    def box(self) -> Box | None: ...
    @property
    def seen(self) -> Box | None: ...
    @property
    def homography(self) -> tuple[float, ...]: ...
    @property
    def whole(self) -> Box | None: ...


def whole_boxes(found: Sequence[Sighting], source_size: tuple[int, int]) -> list[Box | None]:
    """The product's box per frame, whole where part of it is hidden.

    A frame where a hand covers half the product sees only the other half again, and its box holds only that;
    the product is as large as the frames that see it whole say. Its extent in the main image is taken over the
    frames found by features (each side at WHOLE_QUANTILE), and holds the product's own pixels in the main image
    where they are known (Located.whole: a hand may cover the same side in every frame); in a frame that saw
    less of it, the box grows on
    each side by as much as the missing part reaches past the part seen, mapped into the frame by the
    similarity (turn, scale, shift) nearest the frame's homography over the part seen. A homography fitted to
    keypoints on one side of a product extrapolates its perspective wildly past them (mapping the whole extent
    by it gave boxes over 1.5 times the product's in a sixth of the frames, and ones still short of it beside
    a hand); its turn and scale over the part seen are sound. Frames located otherwise, or not at all, keep
    their box."""
    extents = np.array([f.seen for f in found if f.seen is not None and f.homography], np.float64)
    if len(extents) < WHOLE_MIN_FRAMES:
        return [f.box for f in found]
    x0, y0 = np.quantile(extents[:, :2], 1 - WHOLE_QUANTILE, axis=0)
    x1, y1 = np.quantile(extents[:, 2:], WHOLE_QUANTILE, axis=0)
    own = next((f.whole for f in found if f.whole is not None), None)
    if own is not None:
        x0, y0, x1, y1 = box_union((x0, y0, x1, y1), own)
    width, height = source_size
    boxes: list[Box | None] = []
    for f in found:
        if f.box is None or f.seen is None or not f.homography:
            boxes.append(f.box)
            continue
        seen = f.seen
        joined = (min(x0, seen[0]), min(y0, seen[1]), max(x1, seen[2]), max(y1, seen[3]))
        similar = _similarity_over(np.array(f.homography).reshape(3, 3), seen)
        (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = (_mapped(r, similar) for r in (joined, seen))
        boxes.append(
            (
                max(0.0, f.box[0] - (bx0 - ax0)),
                max(0.0, f.box[1] - (by0 - ay0)),
                min(float(width), f.box[2] + (ax1 - bx1)),
                min(float(height), f.box[3] + (ay1 - by1)),
            )
        )
    return boxes


def _similarity_over(homography: np.ndarray, rect: Box) -> np.ndarray:
    """The similarity (2×3) nearest the homography over a grid of the rectangle's points."""
    xs, ys = np.meshgrid(np.linspace(rect[0], rect[2], 5), np.linspace(rect[1], rect[3], 5))
    points = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)
    mapped = cv2.perspectiveTransform(points.reshape(-1, 1, 2), homography).reshape(-1, 2)
    # least squares of x' = a·x − b·y + c, y' = b·x + a·y + d
    rows = np.concatenate(
        [
            np.stack([points[:, 0], -points[:, 1], np.ones(len(points)), np.zeros(len(points))], axis=1),
            np.stack([points[:, 1], points[:, 0], np.zeros(len(points)), np.ones(len(points))], axis=1),
        ]
    )
    (a, b, c, d), *_ = np.linalg.lstsq(rows, np.concatenate([mapped[:, 0], mapped[:, 1]]), rcond=None)
    return np.array([[a, -b, c], [b, a, d]])


def _mapped(rect: Box, transform: np.ndarray) -> Box:
    """The bounds of a rectangle mapped by a 2×3 transform."""
    corners = np.array(
        [[rect[0], rect[1], 1], [rect[2], rect[1], 1], [rect[2], rect[3], 1], [rect[0], rect[3], 1]]
    )
    at = corners @ transform.T
    return (float(at[:, 0].min()), float(at[:, 1].min()), float(at[:, 0].max()), float(at[:, 1].max()))


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


#: a product the features lose for a moment (turned to a side its main image does not show, blurred by a
#: swing, half hidden by the hand holding it) is followed from the neighbouring sample that has it: the frame's
#: own pixels there, searched for near the same place in this frame. Followed at most this many samples from a
#: frame that found it (at 2 samples a second: one second), so that a product that has left the frame is not
#: followed onto the background it stood on
FOLLOW_STEPS = 2
#: normalised cross-correlation the product's pixels must reach where they are found again
FOLLOW_NCC = 0.7
#: of the box, the central part searched for (its edges show the background behind the product)
FOLLOW_CORE = 0.8
#: the search reaches this share of the box's size past it on every side
FOLLOW_REACH = 0.5
#: sizes of the product tried, against the neighbouring sample's
FOLLOW_SCALES = (0.9, 1.0, 1.1)
#: the core is searched for at most this long a side: the correlation needs no more
FOLLOW_SIDE = 64
#: a core flatter than this (standard deviation of its grey levels) matches any plain wall
FOLLOW_MIN_STD = 12.0
#: a box followed back to its frame lands this close to where it was (share of its size), or is dropped
FOLLOW_BACK = 0.1
#: the product's mean colour where it is found again: its brightness within this factor either way, and each
#: channel's share of it within FOLLOW_HUE
FOLLOW_LIGHT = 1.5
FOLLOW_HUE = 0.04
#: a followed box's confidence, against the sample it was followed from
FOLLOW_DECAY = 0.8


def follow(
    frames: Sequence[np.ndarray], found: Sequence[Located], source_size: tuple[int, int]
) -> list[Located]:
    """The product in every frame of a run of samples (RGB, in time order, any one size), where the locator
    lost it next to a frame that had it: each sample without a box (or with only a blob of the product's colours,
    next to one found otherwise) takes the box where the neighbouring
    sample's product pixels are found again (forward, then backward for what is still empty), up to
    FOLLOW_STEPS samples from a located one. Boxes stay in source pixels; a followed one has method
    "followed" and, where the sample it came from was found by features, the same part of the main image seen
    and that sample's homography moved as the product moved (so whole_boxes completes it as it completes
    that sample's box where a hand covers part of the product)."""
    out = list(found)
    if not out:
        return out
    scale = frames[0].shape[1] / source_size[0]
    steps = [0 if f.box is not None else FOLLOW_STEPS + 1 for f in out]
    for order in (range(1, len(out)), range(len(out) - 2, -1, -1)):
        for i in order:
            j = i - 1 if order.step == 1 else i + 1
            before = out[j]
            # a blob of the product's colours often holds only its lit side: the product's own pixels followed
            # from a sample that saw more of it are the better box
            lost = out[i].box is None or (out[i].method == "colour" and before.method != "colour")
            if not lost or before.box is None or steps[j] >= FOLLOW_STEPS:
                continue
            seen = scale_box(before.box, scale, scale)
            moved = _found_again(frames[j], seen, frames[i])
            if moved is None:
                continue
            box, shift = moved
            back = _found_again(frames[i], box, frames[j])
            if back is not None and _agrees(back[0], seen):
                out[i] = _moved(before, box, shift, scale)
                steps[i] = steps[j] + 1
    return out


def _moved(before: Located, box: Box, shift: np.ndarray, scale: float) -> Located:
    """A sample's find moved into the next frame: box (frame pixels) and the shift (3×3, frame pixels) that took
    the product there."""
    to_frame = np.diag([scale, scale, 1.0])
    in_source = np.linalg.inv(to_frame) @ shift @ to_frame
    homography = (
        tuple(float(v) for v in (in_source @ np.array(before.homography).reshape(3, 3)).ravel())
        if before.homography
        else ()
    )
    quad = (
        tuple(
            (float(x), float(y))
            for x, y in cv2.perspectiveTransform(
                np.array(before.quad, np.float32).reshape(-1, 1, 2), in_source
            ).reshape(-1, 2)
        )
        if before.quad
        else ()
    )
    return Located(
        scale_box(box, 1 / scale, 1 / scale),
        before.confidence * FOLLOW_DECAY,
        "followed",
        quad,
        before.seen,
        homography,
        before.whole,
    )


def _agrees(back: Box, box: Box) -> bool:
    """Whether a box followed back to the frame it came from (back) lands on it again (within FOLLOW_BACK of
    its size): pixels that left with the product match some other place going back; its own pixels do not."""
    size = max(box[2] - box[0], box[3] - box[1])
    return (
        abs((back[0] + back[2]) - (box[0] + box[2])) / 2 <= FOLLOW_BACK * size
        and abs((back[1] + back[3]) - (box[1] + box[3])) / 2 <= FOLLOW_BACK * size
    )


def _same_colour(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two RGB patches have the same mean colour, up to a change of light (FOLLOW_LIGHT either way):
    the grey levels' correlation says nothing of colour, and a smooth, round product's shading correlates with
    any smooth shading."""
    ca = a.reshape(-1, 3).mean(axis=0) + 1.0
    cb = b.reshape(-1, 3).mean(axis=0) + 1.0
    light = float(cb.sum() / ca.sum())
    return (
        1 / FOLLOW_LIGHT <= light <= FOLLOW_LIGHT
        and float(np.abs(ca / ca.sum() - cb / cb.sum()).max()) <= FOLLOW_HUE
    )


def _found_again(previous: np.ndarray, box: Box, frame: np.ndarray) -> tuple[Box, np.ndarray] | None:
    """Where box's core in the previous frame is in this one (both the same size), by normalised
    cross-correlation over a few sizes near the same place, with the scaling and shift (3×3) that took it
    there; None where nothing correlates FOLLOW_NCC."""
    h, w = frame.shape[:2]
    bw, bh = box[2] - box[0], box[3] - box[1]
    trim = (1 - FOLLOW_CORE) / 2
    cx0, cy0 = round(max(0.0, box[0] + trim * bw)), round(max(0.0, box[1] + trim * bh))
    cx1, cy1 = round(min(float(w), box[2] - trim * bw)), round(min(float(h), box[3] - trim * bh))
    if cx1 - cx0 < 8 or cy1 - cy0 < 8:
        return None
    core = cv2.cvtColor(previous[cy0:cy1, cx0:cx1], cv2.COLOR_RGB2GRAY)
    if float(core.std()) < FOLLOW_MIN_STD:
        return None
    k = min(1.0, FOLLOW_SIDE / max(core.shape))
    sx0, sy0 = max(0, round(box[0] - FOLLOW_REACH * bw)), max(0, round(box[1] - FOLLOW_REACH * bh))
    sx1, sy1 = min(w, round(box[2] + FOLLOW_REACH * bw)), min(h, round(box[3] + FOLLOW_REACH * bh))
    area = cv2.cvtColor(frame[sy0:sy1, sx0:sx1], cv2.COLOR_RGB2GRAY)
    area = cv2.resize(area, None, fx=k, fy=k, interpolation=cv2.INTER_AREA) if k < 1 else area
    best: tuple[float, int, int, float] | None = None
    for s in FOLLOW_SCALES:
        size = (max(4, round(core.shape[1] * k * s)), max(4, round(core.shape[0] * k * s)))
        if size[0] > area.shape[1] or size[1] > area.shape[0]:
            continue
        scores = cv2.matchTemplate(
            area, cv2.resize(core, size, interpolation=cv2.INTER_AREA), cv2.TM_CCOEFF_NORMED
        )
        _, peak, _, (x, y) = cv2.minMaxLoc(scores)
        if best is None or peak > best[0]:
            best = (float(peak), x, y, s)
    if best is None or best[0] < FOLLOW_NCC:
        return None
    _, x, y, s = best
    # the core found at (x, y) of the shrunk search area; the box round it grows by the same trim
    x0, y0 = sx0 + x / k, sy0 + y / k
    cw, ch = (cx1 - cx0) * s, (cy1 - cy0) * s
    there = frame[round(y0) : round(y0 + ch), round(x0) : round(x0 + cw)]
    if there.size == 0 or not _same_colour(previous[cy0:cy1, cx0:cx1], there):
        return None
    fw, fh = cw / FOLLOW_CORE, ch / FOLLOW_CORE
    gx, gy = (fw - cw) / 2, (fh - ch) / 2
    shift = np.array([[s, 0.0, x0 - s * cx0], [0.0, s, y0 - s * cy0], [0.0, 0.0, 1.0]])
    found = (max(0.0, x0 - gx), max(0.0, y0 - gy), min(float(w), x0 + cw + gx), min(float(h), y0 + ch + gy))
    return found, shift

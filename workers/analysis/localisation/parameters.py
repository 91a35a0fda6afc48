"""Every tuned figure of the localisation, in one place, each named for what it measures.

Grouped by the part of the design that reads it; the reasons for each value stand beside it, and the
measurements behind them in docs/performance.md. The calibration's curves are fitted, not set: they are
data (calibration.json), written by bench/calibrate.py. `python -m devtools.parameters
workers/analysis/localisation` counts what is here.
"""

from __future__ import annotations

# --- Frames and samples every source shares -------------------------------------------------------

#: the main image is worked on at most this long a side: enough keypoints, bounded cost
TEMPLATE_SIDE = 320
#: frames are searched at this long side (scaled up or down): small products need the pixels
LOCATE_SIDE = 768
#: a main image is segmented (cut out of its photo, split into a scene's parts) at most this long a side: the
#: outline is wanted, not the detail
SEGMENT_SIDE = 160
#: samples of a video that must agree before what they say together is taken over what each says: the
#: product's whole extent in its main image (whole_boxes), which of a scene's parts the product is (parts)
AGREEING_SAMPLES = 3
#: grey levels' variance that flat pixels have anyway (sensor noise, compression): a flat wall in a flat ring
#: is no outline, and a patch no more varied than this correlates with any plain wall as well as with itself
FLAT_NOISE = 25.0
#: how far a product's edge is uncertain, as a share of its size: a cut's edge lies a few pixels off the
#: product's and a frame's edges are blurred, so a rim this wide round its own pixels may still agree with a
#: frame (features); a box's edges show the background behind it, so following looks for the box less this rim
#: on every side, and takes a box followed back to its frame only where it lands within this rim of where it was
RIM = 0.1
#: a part of a region (a blob's core, an agreeing region cut off from the rest by an occluder) is a part of it,
#: not a speck, where it holds at least this share of the region's pixels
PART_SHARE = 0.1


# --- Local features (features) --------------------------------------------------------------------

#: keypoints kept per image, the strongest (a frame's; the main image, at TEMPLATE_SIDE, has fewer): a busy
#: scene's corners outnumber a small product's, and with fewer kept a product a seventh of a frame's height in a
#: star field or a street loses its own to them; more finds nothing more on frames LOCATE_SIDE long
MAX_KEYPOINTS = 4000
#: a product the features miss is looked for again on the frame scaled up this much: ORB describes a keypoint
#: by the 31-pixel patch round it, more than the whole height of a car seen a tenth of a frame wide. Only the
#: levels of that frame's pyramid down to the frame's own size are searched (see FeatureSource): a product seen
#: small is no larger than its main image, and the frame's own keypoints were searched already
FINE_SCALE = 2.0
#: samples apart at which a run of samples is searched scaled up (ProductLocator.locate_all)
FINE_EVERY = 2
#: matches a homography must explain before the product counts as found by its features
MIN_INLIERS = 8
#: inliers at which the features' confidence saturates; a main image with fewer keypoints than this could never
#: be found surely by them: the product is "plain", and its colours or outline are the evidence instead
FULL_INLIERS = 40
#: a copy of the main image this long a side gives the keypoints of a product seen small (see _small_keypoints)
SMALL_SIDE = 96
#: the main image warped onto the frame agrees with it where, both blurred by AGREE_BLUR px and the image
#: scaled by a gain per channel (the frame's light against the image's, read at the agreeing keypoints, where
#: the product is for certain: unbounded, as a bound cut nothing off on the quality set), no channel differs by
#: AGREE_LEVEL (of 255)
AGREE_BLUR = 2.0
AGREE_SIDE = 256
AGREE_LEVEL = 28.0
#: in a studio shot, an agreeing region not joined to the keypoints counts when it is at least PART_SHARE of
#: the joined ones' area
#: Lowe's ratio test: the best match must be this much closer than the second best
RATIO = 0.78


# --- Colour (colour) ------------------------------------------------------------------------------

#: a plain product's colours are evidence only when its foreground's median saturation is at least this
#: (of 255): hue means nothing on grey, and a grey product's histogram matches every grey wall, road and sky
MIN_SATURATION = 40

#: the lights (a gain per channel) a product's colours are also looked for under, where they are not found as its
#: photo shows them: warmer and cooler (red against blue), greener and redder
LIGHTS = tuple((warm, green, 1 / warm) for warm in (0.87, 1.0, 1.15) for green in (0.9, 1.0, 1.1))
#: stronger lights, each looked for on its own (the union of their colours runs into the background: a red
#: product's under every one of them are also a face's and a brick wall's), where LIGHTS find nothing. A blob
#: found under one must look much like the product (STRONG_NCC): at LOOK_NCC, faces and walls of its shifted
#: hues pass for it, and at LOOK_NCC_SMALLER a plain product's own blobs under them are lost.
#: They are looked for in the frame at the main image's size (TEMPLATE_SIDE): a blob is compared with the
#: product's look, and needs no more pixels than the image that look came from
STRONG_LIGHTS = tuple(
    (warm, green, 1 / warm)
    for warm in (0.8, 1.0, 1.25)
    for green in (0.83, 1.0, 1.2)
    if (warm, green) != (1, 1)
)
STRONG_NCC = 0.6

#: a blob of the product's colours is the product when its pixels, scaled to LOOK_SIDE a side, correlate with
#: the product's own by at least LOOK_NCC (colour channels together, over the product's pixels): a plain
#: product's colours are often a face's, a brick wall's or a sign's too, but its shading is not: such blobs
#: correlate less than LOOK_NCC with the product's own pixels, the product's own blobs mostly well above it
LOOK_SIDE = 32
LOOK_NCC = 0.45
#: a blob of the product's colours whose box covers more than this share of the frame is a background, unless
#: it looks like the product
BACKGROUND_SHARE = 0.6
#: blobs of the product's colours, largest first, whose look is compared with the product's in a frame; one
#: smaller than the largest is the product where it looks this much like it: a product beside a face of its
#: hues looks well above this, slices of faces and walls beside larger blobs below it
LOOKED_BLOBS = 3
LOOK_NCC_SMALLER = 0.7
#: a blob's core: its pixels whose colours match the product's histogram this strongly (of 255); a hand or a
#: face of the product's hues joins its blob at the weaker levels, not at this one
CORE_MATCH = 192
#: a core is trusted where it holds at least PART_SHARE of its blob's pixels
#: the blob's pixels within this share of the core's size (the square root of its area) of it are the product's
CORE_REACH = 0.3
#: core parts under this share of the core are specks
CORE_SPECK = 0.05

#: a blob grows over the pixels whose colours the product's histogram back-projects to at least this (of 255;
#: the blob itself is those at 96 or more)
FAINT_MATCH = 64


# --- Outline (silhouette) -------------------------------------------------------------------------

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


# --- A main image's own pixels (backdrop) ---------------------------------------------------------

#: a pixel of a studio shot is the product's where a channel differs from the backdrop by more than this
BACKDROP_LEVEL = 24

#: a photo to its edges is cut by GrabCut at SEGMENT_SIDE, from a rectangle this share of it in from every
#: edge (what the photo is of is inside; its surroundings reach the edges)
CUT_INSET = 0.05
#: a cut is clean, and its pixels the product's, when its largest part holds this share of it, is one solid
#: blob (this share of its convex hull: a scene of many things cuts ragged, a single object nearly solid) and
#: covers a share of the photo between these (a close-up's cut is one feature of its subject)
CUT_JOINED = 0.9
CUT_SOLIDITY = 0.85
CUT_AREA = (0.1, 0.9)


# --- A scene's parts (parts) ----------------------------------------------------------------------

#: a scene is split into its parts by its colours: clustered (k-means in Lab, SCENE_COLOURS clusters) at
#: SEGMENT_SIDE a side, each cluster's connected regions a part where it is one solid thing (CUT_SOLIDITY of its
#: convex hull) of a share of the photo between SCENE_AREA, touching at most one of its edges (a wall, a
#: table or a cloth behind the product runs off the photo on two sides or more), whose colours are its own:
#: at least SCENE_OWN of the photo's match to its hue-saturation histogram lies in it (an object of its own
#: colours among other things lies well above it; patches of a texture whose colours are all over the photo,
#: such as fur, well below it, and they match a street's colours as readily); at most as many as there are colours, the largest (each
#: part is a locator built and run on the samples: a bound on the cost, which cut no part off on the quality set)
SCENE_COLOURS = 8
SCENE_AREA = (0.01, 0.4)
SCENE_OWN = 0.6


# --- Comparing the sources' finds (locator) -------------------------------------------------------

#: a find at least this likely to be the product (calibrated, Located.p) is not second-guessed by the sources
#: after it, which cost more or are right less often
P_SURE = 0.9


# --- Following between samples (following) --------------------------------------------------------

#: a product the features lose for a moment (turned to a side its main image does not show, blurred by a
#: swing, half hidden by the hand holding it) is followed from the neighbouring sample that has it: the frame's
#: own pixels there, searched for near the same place in this frame. Followed at most this many samples from a
#: frame that found it (at 2 samples a second: one second), so that a product that has left the frame is not
#: followed onto the background it stood on
FOLLOW_STEPS = 2
#: normalised cross-correlation the product's pixels must reach where they are found again
FOLLOW_NCC = 0.7
#: sizes of the product tried, against the neighbouring sample's (the temporal model allows more change of size
#: between samples, exp(±RESIZE_PER_S · dt): sizes that far apart held fewer boxes on the development half)
FOLLOW_SCALES = (0.9, 1.0, 1.1)
#: the core is searched for at most this long a side: the correlation needs no more
FOLLOW_SIDE = 64
#: the product's mean colour where it is found again: its brightness within this factor either way, and each
#: channel's share of it within FOLLOW_HUE
FOLLOW_LIGHT = 1.5
FOLLOW_HUE = 0.04
#: a followed box's confidence, against the sample it was followed from
FOLLOW_DECAY = 0.8


# --- Completing a box over a video (whole) --------------------------------------------------------

#: the product's extent in the main image over a video: each side at this quantile of the frames' extents,
#: towards the larger side (a frame where an occluder hides part of the product shows less of it; one
#: frame's stray agreement does not stretch every box)
WHOLE_QUANTILE = 0.8
#: the product's own pixels in its main image are its whole extent where they fill less than this share of
#: their bounds (an outline, not a rectangle)
WHOLE_FILL = 0.9


# --- The product over time (temporal) -------------------------------------------------------------

#: a handled product's centre moves up to about its own size in a second at no cost
MOVE_PER_S = 1.0
#: and its side changes by up to about this much (natural log) in a second at no cost (a factor of 1.65)
RESIZE_PER_S = 0.5

#: probabilities are held inside (P_FLOOR, 1 − P_FLOOR), so that no cost is infinite
P_FLOOR = 1e-3

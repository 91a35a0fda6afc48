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
(LIGHTS); searched under stronger lights one by one, or as the frame's one blob of its colours, it gave more
boxes but few that held it. A plain grey or dark product has only its outline: it is found where the pixels inside
its silhouette stand out from those round it, also where it runs a little past the frame's edge, and not in a busy
scene, where many things stand out as much. A photo of the product among other things is found whole in no frame: where a run of samples finds nothing,
each of its parts is looked for on its own, and the part found in the most samples (AGREEING_SAMPLES at
least) is the product.

Each source's raw confidence measures something of its own; calibration maps each onto one scale, the probability
that its box is the product (a logistic curve per source, fitted by bench/calibrate.py on the quality set's tuning
half), and the locator keeps the likeliest find of the sources it asks, in turn, until one is sure (P_SURE).

Over a video, whole_boxes completes a box a hand cuts short to the extent the frames seeing the product whole agree
on, and at least to its own pixels' extent in the main image where those are an outline (a hand may hide the same
side throughout). Where the features lose the product for a sample or two (a swing blurs it, it turns a side the
main image does not show), follow finds its pixels from the neighbouring sample again, where their colour and the
way back agree. Which boxes are the product is then chosen over all the video's samples at once (temporal): the
least-cost path through the samples' finds, their calibrated probabilities against the moves between them, so that
a one-sample spike or a false find far off is rejected and a product's exit and return are not. The figures
behind these choices are measured in docs/performance.md. Pure: arrays in, boxes out.

Each source is a module: features (local features and a homography), colour (blobs of the product's colours),
silhouette (a plain product's outline), parts (a scene's parts), backdrop (a main image's own pixels); locator
builds them once per item and compares their finds on the calibrated scale (calibration); whole, following and
temporal work over a video's finds. Every tuned figure they read is in parameters, with its reason.
"""

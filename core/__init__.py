"""Shared core of reelgen: the exception hierarchy, settings and version facts."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("reelgen")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

# Bumped by hand whenever the pipeline's output bytes change for the same settings; part of config_hash.
# 2: letterboxed pictures scaled by swscale's area filter (within one level of OpenCV's), the fill shrunk in steps.
# 3: clips at a constant frame rate (each tick shows the frame on screen), audio at 48 kHz over the clip's span.
# 4: crop first: smaller crops placed past captions, face-shaped "text" ignored, captions timed from the frame
#    they appear, grey products not located by colour.
# 5: a product cut out of a main photo is boxed where the warped photo agrees with the frame, not by its
#    keypoints' extent.
# 8: a source with black bars framed inside its picture (workers.framing.picture_area).
# 9: the product located with 4000 keypoints per frame (a small product in a busy scene is found).
# 10: a partly covered product boxed whole over the video (workers.analysis.localise.whole_boxes); a smaller crop taken
#     only where it can hold the whole subject.
# 11: windows may start on any sample, not only on the sampling grid.
# 12: a plain product is located by its colours only from a studio shot; captions followed over shot cuts.
# 13: text cleared by its glyphs' height (a region's short side); print at a located box's edge is on the
#     product; a region taller than any caption line is no text; a letterboxed region holds the product with
#     a margin.
# 14: where no one crop follows the product past text, the crop jumps inside a shot, as at a cut, to another
#     place or size (each part at least half a second) instead of letterboxing.
# 15: a product the features lose for a sample or two is followed there from a neighbouring sample that has it.
# 16: a window across a shot cut keeps 60 % of its score; no window opens or closes on a flash of another shot.
# 17: a crop's misses of the product are counted where its smoothed crop is, not on the planner's search grid.
# 18: a plain product cut cleanly out of a photo to its edges is boxed by its colours where the template
#     matches it, not by the match's box.
# 19: a smaller crop is also tried at the place nearest the subject where every text region is wholly inside
#     or outside it across its moving axis.
# 20: a caption's backing panel is kept out of crops as its text is; a region ever seen in the same place beside
#     the located product is a caption while the product covers it.
# 21: a product's colours locate it wherever its own pixels are known, textured products included, when the
#     blob looks like the product.
# 22: a plain grey or dark product is located by its outline; a plain product's located samples score at least
#     what any unlocated sample can.
# 23: a clip letterboxed for text is cropped past the detected regions that do not read as text (a face's eyes
#     and teeth), read by PP-OCRv4's recogniser.
# 24: analysis decodes without the in-loop deblocking filter; the picture inside black bars keeps a caption's
#     surround, not only its glyphs.
# 25: a letterboxed region holds print on the product whole too (a caption the product covers throughout was cut
#     as print); before letterboxing, smaller crops are tried again with half the margin round the product.
# 26: a product the frame's features miss is searched for on the frame scaled up twice (every other sample of a
#     run, and outwards from where that finds it): a product a tenth of the frame tall is found.
# 27: a plain product's template match is narrowed to a blob of its colours only where the blob looks like it
#     (a re-lit apple's match was narrowed to the face beside it).
# 28: a main image that is a scene (the product among other things) is found through the part of it that a run
#     of samples shows: its solid, one-colour parts are looked for in turn where the whole photo is found nowhere.
# 29: a plain product's colours are also looked for under warmer, cooler, greener and redder light where no blob
#     of them as its photo shows them looks like it (a re-lit teal toy left its photo's hues).
# 30: colour finds checked by their look try the three largest blobs (a face of an orange's hues beside it).
# 31: a product's boxes are completed to its own pixels in its main image where those are an outline (a hand
#     covering the same side in every frame).
# 32: a colour blob that looks like the product is boxed round its strongly matching core where that looks more
#     like it (a hand of the product's hues joined its blob).
# 33: a colour blob over most of the frame is the product where it looks like it (a product held up close).
# 34: a plain product's colours are also looked for under each of a few stronger lights on its own, a blob found
#     so taken where it looks much like the product (a teal toy in green light).
# 35: samples that lost the product take its box tracked there through the window's frames (median flow) from
#     the nearest sample that located it.
# 36: a letterboxed picture is shown small enough that its text keeps inside the clip's title-safe area.
PIPELINE_VERSION = "36"

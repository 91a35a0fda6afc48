"""The product in a frame, from its main image: the evidence sources (features, colour, outline; a scene's parts)
built once per item; on each frame, their finds compared on one calibrated scale."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import cv2
import numpy as np

from workers.analysis.localisation.backdrop import cut_out, foreground
from workers.analysis.localisation.colour import ColourSource
from workers.analysis.localisation.common import Box, Located, at_locate_side, in_source, own_bounds
from workers.analysis.localisation.features import FeatureSource, Keys
from workers.analysis.localisation.parameters import (
    AGREEING_SAMPLES,
    FINE_EVERY,
    P_SURE,
    TEMPLATE_SIDE,
    WHOLE_FILL,
)
from workers.analysis.localisation.parts import in_photo, part_transform, scene_parts
from workers.analysis.localisation.silhouette import SilhouetteSource


class ProductLocator:
    """Built once per item from its main image (RGB); `locate` per analysed frame. own: the product's pixels
    in the image (0/255), where they are known otherwise (one of the parts of a scene, see scene_parts)."""

    def __init__(self, main_image: np.ndarray, own: np.ndarray | None = None) -> None:
        if own is not None:
            bounds = own_bounds(own)
            main_image, own = main_image[bounds], own[bounds]
        scale = min(1.0, TEMPLATE_SIDE / max(main_image.shape[:2]))
        image = (
            cv2.resize(main_image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
            if scale < 1
            else main_image
        )
        self._image = np.ascontiguousarray(image)
        mask = (
            foreground(image)
            if own is None
            else cv2.resize(own, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_NEAREST)
        )
        #: a studio shot (a plain background, removed), or a part of a scene: only its foreground is the product
        studio = own is not None or bool(mask.min() == 0)
        #: the product's own pixels, whose colours are evidence of it: a studio shot's foreground, or a plain
        #: product cut cleanly out of a photo to its edges (None where neither: the photo's colours are its
        #: surroundings' too); the features keep the whole photo, which a cut gone wrong cannot take from them
        product: np.ndarray | None = mask if studio else cut_out(image)
        whole: Box | None = None
        if product is not None:
            ys, xs = own_bounds(product)
            # own pixels that fill their bounds are a picture, not a thing's outline: a plain border round a
            # whole scene, of which the video may show one thing only (a box's front fills them too, and its
            # print is seen whole often enough)
            if float(product[ys, xs].mean()) < WHOLE_FILL * 255:
                whole = (float(xs.start), float(ys.start), float(xs.stop), float(ys.stop))
        self._features = FeatureSource(self._image, mask, product, studio, whole)
        self._colour = ColourSource(image, mask, product, self._features.textured)
        #: a plain grey product has neither keypoints nor colours to go by, only its outline
        self._silhouette = (
            SilhouetteSource((product[own_bounds(product)] > 0).astype(np.float32))
            if product is not None and not self.textured and not self.colourful
            else None
        )
        #: a photo that runs to its edges and does not cut out cleanly is a scene the product is one part of:
        #: the photo, and its parts' locators with the transform (3×3) from a part's pixels to this one's
        #: (built when a run of samples first needs them, see _discovered)
        self._scene: np.ndarray | None = main_image if product is None else None
        self._parts: list[tuple[ProductLocator, np.ndarray]] | None = None

    @property
    def textured(self) -> bool:
        """Whether the product has enough keypoints for its features to be the evidence."""
        return self._features.textured

    @property
    def colourful(self) -> bool:
        """Whether the product's colours are evidence of it (MIN_SATURATION)."""
        return self._colour.colourful

    def colour_near(self, frame: np.ndarray, source_size: tuple[int, int], near: Box) -> Box | None:
        """The blob of the product's colours that overlaps near, in source pixels (ColourSource.colour_near)."""
        return self._colour.colour_near(frame, source_size, near)

    def locate(self, frame: np.ndarray, source_size: tuple[int, int], *, fine: bool = True) -> Located:
        """The product in an RGB frame of the source (any size), its box scaled to source_size (width, height);
        fine: where the frame's features find nothing, those of the frame scaled up are searched too."""
        return self._located(at_locate_side(frame), source_size, fine, None)

    def locate_all(self, frames: Sequence[np.ndarray], source_size: tuple[int, int]) -> list[Located]:
        """The product in a run of samples (RGB, in time order), each located on its own; the frame scaled up
        is searched on every FINE_EVERY-th sample where nothing was found, and outwards from each sample that
        search finds the product in, while it keeps finding it: a product seen small stays on screen for
        seconds, and most samples where nothing is found are of other scenes, where the search finds nothing
        at twice the cost of the rest. Where the main image is a scene and nothing is found in any sample, the
        part of it the samples show is the product (_discovered)."""
        scaled = [at_locate_side(frame) for frame in frames]
        keys = [self._features.keys(frame) if self.textured else None for frame in scaled]
        found = [self._located(frame, source_size, False, k) for frame, k in zip(scaled, keys, strict=True)]
        if self.textured:
            self._search_finer(scaled, found, source_size)
        if self._scene is not None and all(f.box is None for f in found):
            if not self.textured:
                keys = [self._features.keys(frame) for frame in scaled]
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
            found[k] = in_source(self._features.fine(frame), frame.shape, size)
            return found[k].box is not None

        for k in range(0, len(scaled), FINE_EVERY):
            if tried[k] or not search(k):
                continue
            for step in (-1, 1):
                j = k + step
                while 0 <= j < len(scaled) and not tried[j] and search(j):
                    j += step

    def _discovered(
        self, scaled: Sequence[np.ndarray], keys: Sequence[Keys | None], size: tuple[int, int]
    ) -> list[Located] | None:
        """The product in samples at LOCATE_SIDE (with their keypoints) where the main image is a scene: the
        part of it (scene_parts) found in the most samples, at least AGREEING_SAMPLES; None where no part is.
        A seller's photo of the product among other things (a toy on a shelf) shows it whole nowhere in a
        video of the product alone; which of its things the product is, the video says. Found by a part, the
        find's outline and homography are the main image's (so whole_boxes completes it as any other)."""
        assert self._scene is not None
        if self._parts is None:
            self._parts = [
                (ProductLocator(self._scene, part), part_transform(self._scene, part, self._image.shape))
                for part in scene_parts(self._scene)
            ]
        best: tuple[int, float, list[Located], np.ndarray] | None = None
        for part, transform in self._parts:
            finds = [part._located(frame, size, False, k) for frame, k in zip(scaled, keys, strict=True)]
            count = sum(f.box is not None for f in finds)
            confidence = sum(f.confidence for f in finds)
            if count >= AGREEING_SAMPLES and (best is None or (count, confidence) > best[:2]):
                best = (count, confidence, finds, transform)
        if best is None:
            return None
        return [in_photo(f, best[3]) for f in best[2]]

    def _located(
        self, frame: np.ndarray, source_size: tuple[int, int], fine: bool, keys: Keys | None
    ) -> Located:
        """locate, on a frame already at LOCATE_SIDE (keys: its keypoints, if already found): the likeliest of
        the sources' finds on the calibrated scale (Located.p), asking each source in the order of what it
        costs and how often it is right, until a find is at least P_SURE."""
        sources: list[Callable[[], Located | None]] = []
        if self.textured:
            sources.append(functools.partial(self._features.find, frame, fine, keys))
        if self.colourful and self._colour.looks:
            sources.append(functools.partial(self._colour.find, frame, looked=True))
        if self._silhouette is not None:
            sources.append(functools.partial(self._silhouette.find, frame))
        best: Located | None = None
        for source in sources:
            found = source()
            if found is not None and (best is None or found.p > best.p):
                best = found
            if best is not None and best.p >= P_SURE:
                break
        return in_source(best, frame.shape, source_size)

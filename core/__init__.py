"""Shared core of reelgen: the exception hierarchy, settings and version facts."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("reelgen")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

# The pipeline's own version, bumped by hand whenever its output bytes change for the same settings. It is part
# of config_hash, so a bump redoes items already done; what each bump changed is in `git log --follow -p core/__init__.py`.
PIPELINE_VERSION = "36"

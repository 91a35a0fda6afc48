"""One exception hierarchy for reelgen.

Every failure mode an item can meet has its own class; the class name is what the ledger records, what
`reelgen retry --error CLASS` selects and what the run summary prints. Messages say what to fix.
"""


class ReelgenError(Exception):
    """Base of every error reelgen raises on purpose."""

    #: transient errors are retried by the task layer before the item is failed
    transient = False


class ConfigError(ReelgenError):
    """Settings or command-line arguments are invalid (exit status 2)."""


class CatalogError(ReelgenError):
    """A catalog could not be read at all."""


class BadCatalogLine(ReelgenError):
    """One catalog line is not valid JSON/CSV or lacks a required field."""


class BadItemId(ReelgenError):
    """An item id does not match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$."""


class DuplicateItemId(ReelgenError):
    """The same item id appears more than once in one catalog."""


class FetchError(ReelgenError):
    """A source could not be fetched."""


class SourceNotFound(FetchError):
    """The source URI points at nothing (missing file, 404, missing key)."""


class SourceUnreachable(FetchError):
    """The source host did not answer, or answered with a server error, after retries."""

    transient = True


class SourceTooSlow(FetchError):
    """The source did not arrive within the download deadline, or came slower than the minimum rate.

    Not transient: a retry would hold a worker for another whole deadline, most likely in vain; `reelgen retry
    --error SourceTooSlow` fetches such items again once the host is fixed.
    """


class HostBusy(FetchError):
    """Every download slot for the source's host stayed taken past the wait bound; the task retries later."""

    transient = True


class SourceTooLarge(FetchError):
    """The source is larger than the configured byte limit."""


class ForbiddenSource(FetchError):
    """The source URI is refused by policy (scheme, or a private/loopback address)."""


class VideoError(ReelgenError):
    """A video cannot be used."""


class UnreadableVideo(VideoError):
    """The file is not a decodable video (corrupt, truncated, not a video container, no video stream)."""


class VideoLimitExceeded(VideoError):
    """The video exceeds the configured duration or pixel limits."""


class ImageError(ReelgenError):
    """The product's main image cannot be decoded."""


class RenderError(ReelgenError):
    """Encoding an output clip failed."""


class StorageError(ReelgenError):
    """The output store refused a read or write."""

    transient = True


class InferenceError(ReelgenError):
    """The inference daemon could not serve a request."""


class DaemonUnavailable(InferenceError):
    """The inference daemon is not running or died mid-request; the task retries."""

    transient = True


class InferenceRejected(InferenceError):
    """The daemon rejected a request (bad shape, unknown model, malformed message)."""


class ItemTimeout(ReelgenError):
    """An item's stage ran past the task time limit."""


class JobNotFound(ReelgenError):
    """No job with that id exists in the ledger."""


class InternalError(ReelgenError):
    """An unexpected exception inside reelgen; the message carries its type and text."""


# --- catalog operations


class JobStateError(ReelgenError):
    """A job control action does not apply to the job's current state (e.g. resuming a completed job)."""


class WorkerLost(ReelgenError):
    """An item's task killed its worker process on every delivery; the item is dead-lettered, not looped."""


class LeaseExpired(ReelgenError):
    """An item's lease expired too many times (lost messages or hung workers); the item is dead-lettered."""


class ItemGone(ReelgenError):
    """An item with outputs no longer appears in the catalog; reported, its outputs are never deleted."""


# --- faults and hostile input


class DiskFull(ReelgenError):
    """The worker's work folder has no space left (ENOSPC/EDQUOT) for a render's scratch files.

    Transient: other renders' scratch files are removed as they finish, so a retry may fit.
    """

    transient = True

"""One exception class per concern. Messages name the value or path, what was expected, and the fix."""


class Ident3dError(Exception):
    """Base class of every error this package raises on purpose."""


class LatentError(Ident3dError, ValueError):
    """Raw latents with the wrong shape, non-finite values or values outside [-1, 1]."""


class DatasetError(Ident3dError):
    """A dataset folder that is missing, incomplete, corrupted or inconsistent with its manifest."""


class ManifestMismatchError(DatasetError):
    """A render or pack would mix settings with the manifest already on disk."""


class RenderError(Ident3dError):
    """A render job that cannot start or finish: bad settings, no GPU, Blender failure."""


class DownloadError(Ident3dError):
    """A download that could not be completed or verified."""


class SubmissionError(Ident3dError):
    """A submitted model or embedding file the evaluator cannot score."""


class ResultError(Ident3dError):
    """A result or leaderboard document that does not match its JSON Schema."""


class DeviceError(Ident3dError):
    """A device that was asked for and is not there (no CUDA, no Cycles GPU backend)."""


class TrainingError(Ident3dError, ValueError):
    """A training run that cannot start or resume: bad config, unknown preset, mismatched run folder."""


def did_you_mean(value: str, known: list[str] | tuple[str, ...]) -> str:
    """`` Did you mean 'x'?`` for the known name nearest a mistyped ``value``, or nothing."""
    import difflib

    close = difflib.get_close_matches(str(value), [str(k) for k in known], n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""

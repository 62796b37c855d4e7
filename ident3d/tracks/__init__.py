"""Benchmark tracks: named, versioned test data, so that any two results can be compared.

The tracks are data (``ident3d/tracks.toml``). A split *is* a track's split only when its content
says so, never a record a user can write: for a rendered track, the latents are bit-identical
(sha256), the variant spec has the track's content hash, every pixel setting is equal, the pixel
fingerprint is within the track's tolerance, and a random sample of its images, re-rendered at
audit time, matches; for the published track, a content hash over all its files equals the pinned
one. Every other split is ``custom:<hash>``: a hash of its latents, variant and pixel settings, so
results on equal data share a key and results on different data never do (docs/tracks.md).
"""

from __future__ import annotations

from ident3d.tracks.identity import (
           content_sha256,
           custom_key,
           differences,
           fingerprint,
           identify,
           latent_matches,
           spec_sha256,
)
from ident3d.tracks.registry import PUBLISHED, SplitSpec, Track, TrackError, get_track, tracks
from ident3d.tracks.table import markdown_block, summary_rows

__all__ = ["PUBLISHED", "SplitSpec", "Track", "TrackError", "content_sha256",
           "custom_key", "differences", "fingerprint", "get_track", "identify", "latent_matches",
           "markdown_block",
           "spec_sha256",
           "summary_rows", "tracks"]

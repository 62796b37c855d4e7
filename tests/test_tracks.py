"""Benchmark tracks: a split is a track's only when it verifies, and results are keyed by it."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from ident3d import atomic, tracks
from ident3d.atomic import sha256_array
from ident3d.latents import sample_uniform
from ident3d.layout import SplitLayout
from ident3d.regions import split_latents
from ident3d.results import Result
from ident3d.variants import get_variant


def test_the_committed_tracks_are_consistent():
    known = tracks.tracks()
    assert {"3dident-published", "3dident-v2", "3dident-v2-64", "3dident-legacy-64"} <= set(known)
    for track in known.values():
        assert track.id == f"{track.name}@{track.version}" and track.protocols
        for name, spec in track.splits.items():
            if track.source == "render":  # the pinned hash is what the seed (and the regions) give
                assert sha256_array(split_latents(track, name)) == spec.latents_sha256
                if spec.region is None and not spec.exclude and not spec.pairs:
                    assert sha256_array(sample_uniform(spec.n, spec.seed)) == spec.latents_sha256
            else:
                assert len(spec.md5) == 32 and spec.archive.endswith(".tar")
    assert tracks.get_track("3dident-v2-64@1") is known["3dident-v2-64"]
    with pytest.raises(tracks.TrackError, match="ident3d tracks"):
        tracks.get_track("3dident-v2-64@7")


def test_tracks_cli_lists_sizes_time_and_disk():
    out = subprocess.run([sys.executable, "-m", "ident3d", "tracks"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "3dident-v2-64@1" in out.stdout and "test 5,000" in out.stdout and "MB" in out.stdout


@pytest.fixture(scope="module")
def tiny_track(tmp_path_factory):
    """A 6-image track rendered once with 1 worker: its fingerprint comes from that render."""
    from ident3d.render.job import plan_job, render_split
    from ident3d.render.settings import resolve_settings

    root = tmp_path_factory.mktemp("track")
    settings = resolve_settings("preview", resolution=32, samples=2)
    render_split(plan_job(root / "one", "test", n=6, seed=5, variant="v2", settings=settings),
                 workers=1, progress=False)
    base = tracks.get_track("3dident-v2-64")
    spec = tracks.SplitSpec(n=6, seed=5, latents_sha256=sha256_array(sample_uniform(6, 5)))
    track = dataclasses.replace(base, name="tiny", resolution=32, splits={"test": spec},
                                render={**base.render, "samples": 2}, recheck={"images": 6, "tolerance": 2.0},
                                fingerprint={**base.fingerprint, "images": 6, "mean": [], "std": []})
    mean, std = tracks.fingerprint(SplitLayout(root / "one", "test"), 6, 1)
    track = dataclasses.replace(track, fingerprint={**track.fingerprint, "mean": mean, "std": std})
    return track, root


@pytest.mark.blender
def test_renders_with_other_worker_counts_verify_and_changed_data_does_not(tiny_track, tmp_path):
    from ident3d.render.job import plan_job, render_split
    from ident3d.render.settings import resolve_settings, track_settings

    track, root = tiny_track
    assert tracks.differences(track, SplitLayout(root / "one", "test")) == []
    render_split(plan_job(tmp_path / "two", "test", n=6, seed=5, variant="v2",
                          settings=track_settings(track)), workers=2, progress=False)
    assert tracks.differences(track, SplitLayout(tmp_path / "two", "test")) == []

    z = sample_uniform(6, 5)
    z[2, 4] = 0.25  # one latent row changed
    np.save(tmp_path / "z.npy", z)
    render_split(plan_job(tmp_path / "row", "test", n=None, seed=5, variant="v2",
                          latents_file=tmp_path / "z.npy", settings=track_settings(track)), progress=False)
    found = tracks.differences(track, SplitLayout(tmp_path / "row", "test"))
    assert any(d.startswith("latents: sha256") for d in found)
    render_split(plan_job(tmp_path / "res", "test", n=6, seed=5, variant="v2",
                          settings=resolve_settings("preview", resolution=24, samples=2)), progress=False)
    assert tracks.differences(track, SplitLayout(tmp_path / "res", "test")) == [
        "render setting resolution: 24, the track's is 32"]
    render_split(plan_job(tmp_path / "legacy", "test", n=6, seed=5, variant="legacy",
                          settings=track_settings(track)), progress=False)
    [found] = tracks.differences(track, SplitLayout(tmp_path / "legacy", "test"))
    assert found.startswith("variant: 'legacy', the track's is the built-in 'v2' (spec sha256")

    # A spec of its own under the frozen name: the spec's content decides, not the name.
    import shutil

    shutil.copytree(root / "one", tmp_path / "renamed")
    manifest = json.loads((tmp_path / "renamed/test/manifest.json").read_text())
    spec = get_variant("v2").to_dict()
    spec["latents"][0]["scale"] = "1/2"
    manifest["variant_spec"] = spec
    (tmp_path / "renamed/test/manifest.json").write_text(json.dumps(manifest))
    [found] = tracks.differences(track, SplitLayout(tmp_path / "renamed", "test"))
    assert "a different spec under the same name" in found


@pytest.mark.blender
def test_noise_with_the_tracks_latents_and_fingerprint_is_not_the_track(tiny_track, tmp_path):
    """The fingerprint is easy to forge; a sample re-rendered at audit time is not."""
    import shutil

    from PIL import Image

    track, root = tiny_track
    shutil.copytree(root / "one", tmp_path / "noise")
    rng = np.random.default_rng(0)
    for path in sorted((tmp_path / "noise/test/images").glob("*.png")):
        pixels = np.asarray(Image.open(path).convert("RGB"))
        noise = rng.permutation(pixels.reshape(-1, 3))  # same pixels, shuffled: same mean and std
        Image.fromarray(noise.reshape(pixels.shape)).save(path)
    layout = SplitLayout(tmp_path / "noise", "test")
    assert tracks.identity._fingerprint_differences(track, layout, 1) == []  # the forgery passes it
    for quick in (False, True):
        [found] = tracks.differences(track, layout, quick=quick)
        assert found.startswith("pixels: ") and "not the track's images" in found
    assert tracks.differences(track, SplitLayout(root / "one", "test"), quick=True) == []


@pytest.mark.blender
def test_a_render_with_the_same_settings_but_other_pixels_fails_the_fingerprint(tiny_track, tmp_path):
    from PIL import Image

    track, root = tiny_track
    import shutil

    shutil.copytree(root / "one", tmp_path / "edited")
    image = tmp_path / "edited/test/images/3.png"
    pixels = np.asarray(Image.open(image).convert("RGB")).copy()
    pixels[:] = 255 - pixels
    Image.fromarray(pixels).save(image)
    found = tracks.differences(track, SplitLayout(tmp_path / "edited", "test"))
    assert len(found) == 1 and found[0].startswith("pixels: the first 6 images differ")


@pytest.mark.blender
def test_results_carry_the_track_whatever_the_package_version_and_custom_data_stays_custom(
        tiny_track, tmp_path, monkeypatch):
    import shutil

    from ident3d.errors import ResultError
    from ident3d.evaluation import evaluate
    from ident3d.leaderboard.entries import entry_from_result

    track, root = tiny_track
    known = {**tracks.tracks(), "tiny": track}
    monkeypatch.setattr(tracks.registry, "tracks", lambda: known)
    shutil.copytree(root / "one", tmp_path / "data")
    np.save(tmp_path / "z.npy", np.load(tmp_path / "data/test/raw_latents.npy"))
    first = evaluate(tmp_path / "z.npy", tmp_path / "data", progress=False).document
    assert first["dataset"]["track"] == track.id
    manifest = json.loads((tmp_path / "data/test/manifest.json").read_text())
    manifest["renderer"]["ident3d"], manifest["renderer"]["blender"] = "9.9.9", "6.1.0"  # a version bump
    (tmp_path / "data/test/manifest.json").write_text(json.dumps(manifest))
    again = evaluate(tmp_path / "z.npy", tmp_path / "data", progress=False).document
    assert again["dataset"]["track"] == track.id
    assert again["dataset"]["manifest_sha256"] != first["dataset"]["manifest_sha256"]

    z = np.load(tmp_path / "data/test/raw_latents.npy")
    z[0, 0] = -z[0, 0]
    np.save(tmp_path / "data/test/raw_latents.npy", z)
    np.save(tmp_path / "z.npy", z)
    custom = evaluate(tmp_path / "z.npy", tmp_path / "data", progress=False).document
    assert custom["dataset"]["track"].startswith("custom:")
    with pytest.raises(ResultError, match="custom data"):
        entry_from_result(Result.parse(custom), "Doe2026Custom", track=track.id)
    assert entry_from_result(Result.parse(custom), "Doe2026Custom")["dataset"] == custom["dataset"]["track"]


@pytest.mark.blender
def test_a_packed_split_is_the_track_only_when_its_array_holds_the_proven_images(tiny_track, tmp_path):
    """The loaders read a packed split from images.npy, not from the image files the re-render check
    proves, so a crafted array (with a manifest that lists its checksum) must not pass as the track."""
    import shutil

    from ident3d.packing import pack_split

    track, root = tiny_track
    shutil.copytree(root / "one", tmp_path / "packed")
    pack_split(tmp_path / "packed", "test", progress=False)
    layout = SplitLayout(tmp_path / "packed", "test")
    assert tracks.differences(track, layout) == []  # proven, and the proof recorded
    images = np.load(layout.packed)
    images[4] = 255 - images[4]
    np.save(layout.packed, images)
    manifest = json.loads(layout.manifest.read_text())
    manifest["packed"]["sha256"] = atomic.sha256_file(layout.packed)  # as whoever crafted it would
    layout.manifest.write_text(json.dumps(manifest))
    for quick in (False, True):
        [found] = tracks.differences(track, layout, quick=quick)
        assert "images.npy: row 4 is not the pixels of 4.png" in found, found

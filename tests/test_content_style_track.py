"""The content/style track (3dident-v2-64-cs): its splits are content/style pairs pinned by their
latents, a result on its test split carries block identifiability, and a manifest whose pairs record
was edited (the style names the block scores read) is no longer the track."""

import dataclasses
import json

import numpy as np
import pytest

from ident3d import tracks
from ident3d.atomic import sha256_array
from ident3d.layout import SplitLayout
from ident3d.regions import split_latents
from ident3d.variants import get_variant

CS_TRACK = "3dident-v2-64-cs"


def test_the_tracks_splits_are_content_style_pairs():
    track = tracks.get_track(CS_TRACK)
    for name, spec in track.splits.items():
        assert set(spec.pairs) == {"style"} and spec.n % 2 == 0
        raw = split_latents(track, name)
        assert sha256_array(raw) == spec.latents_sha256 and len(raw) == spec.n
        names = list(get_variant(track.variant).names)
        shared = [names.index(f) for f in names if f not in spec.pairs["style"]]
        assert np.array_equal(raw[0::2][:, shared], raw[1::2][:, shared])  # content: shared exactly
        redrawn = [names.index(f) for f in spec.pairs["style"]]
        assert (raw[0::2][:, redrawn] != raw[1::2][:, redrawn]).all()  # style: drawn again


@pytest.mark.blender
@pytest.mark.slow
def test_a_result_on_the_track_carries_block_scores_and_an_edited_record_is_not_the_track(
        tmp_path, monkeypatch):
    from ident3d.baselines.pixels import export_pixel_readout
    from ident3d.evaluation import evaluate
    from ident3d.render.job import plan_track_job, render_split

    base = tracks.get_track(CS_TRACK)
    track = dataclasses.replace(base, name="tiny-cs", resolution=32, render={**base.render, "samples": 2},
                                recheck={"images": 2, "tolerance": 2.0},
                                splits={"test": dataclasses.replace(base.splits["test"], n=16)})
    pinned = sha256_array(split_latents(track, "test"))
    spec = dataclasses.replace(track.splits["test"], latents_sha256=pinned)
    track = dataclasses.replace(track, splits={"test": spec})
    render_split(plan_track_job(tmp_path / "data", track, "test"), workers=1, progress=False)
    known = {**tracks.tracks(), track.name: track}
    monkeypatch.setattr(tracks.registry, "tracks", lambda: known)
    layout = SplitLayout(tmp_path / "data", "test")
    assert tracks.differences(track, layout) == []
    model = export_pixel_readout(tmp_path / "pixels.pt2", 32)
    result = evaluate(model, tmp_path / "data", progress=False).document
    assert result["dataset"]["track"] == "tiny-cs@1"
    assert result["blocks"]["style_factors"] == sorted(spec.pairs["style"])

    manifest = json.loads(layout.manifest.read_text())
    manifest["pairs"] = {"style": ["object_x"]}  # claim position is style: the block scores would move
    layout.manifest.write_text(json.dumps(manifest))
    assert any(d.startswith("pairs: the manifest says {'style': ['object_x']}")
               for d in tracks.differences(track, layout))
    again = evaluate(model, tmp_path / "data", progress=False).document
    assert again["dataset"]["track"].startswith("custom:")

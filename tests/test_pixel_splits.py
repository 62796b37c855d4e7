"""The pixel arm's spread over the protocol's random samples (ident3d.baselines.pixel_splits): seed 0
is the protocol's own sample, other seeds move the score, and the committed file belongs to the
committed pixel entry or the relations refuse it."""

import json

import numpy as np
import pytest

from ident3d.baselines.pixel_splits import METRICS, OUT, PROTOCOL, main, pixel_samples, sample_scores
from ident3d.errors import Ident3dError

PIXELS = "cl-ica-2021/Ident2026CpuTrack_v2-pixels"


def test_seed_0_is_the_protocols_own_sample_and_other_seeds_move_the_score():
    rng = np.random.default_rng(3)
    z = rng.uniform(size=(5000, 4))
    h = z @ rng.normal(size=(4, 6)) + rng.normal(scale=0.5, size=(5000, 6))
    scores = sample_scores(z, h, PROTOCOL, range(4))
    official = PROTOCOL.score(z, h)
    for metric in METRICS:
        assert scores[metric][0] == PROTOCOL.mean(official.per_latent(metric))
        assert len(set(scores[metric])) == 4  # each sample its own score


def test_the_committed_samples_belong_to_the_committed_pixel_entry(committed_entries):
    entry = next(e for e in committed_entries if e.key == PIXELS)
    samples = pixel_samples(entry)
    assert all(len(samples[m]) >= 3 and samples[m][0] == pytest.approx(entry["metrics"][m], abs=1e-9)
               for m in METRICS)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["linear_r2"].__setitem__(0, 0.6), "linear_r2 of sample seed 0 is 0.6"),
    (lambda d: d.__setitem__("protocol_version", "0.9"), "under cl-ica-2021 0.9"),
    (lambda d: d.__setitem__("mcc_pearson", [0.3, 0.3]), "lists of at least 3 scores"),
])
def test_samples_that_are_not_the_entrys_are_refused(committed_entries, tmp_path, edit, message):
    entry = next(e for e in committed_entries if e.key == PIXELS)
    document = json.loads(OUT.read_text())
    edit(document)
    (tmp_path / "pixel_splits.json").write_text(json.dumps(document))
    with pytest.raises(Ident3dError, match=message) as caught:
        pixel_samples(entry, tmp_path / "pixel_splits.json")
    assert "Fix: run `python -m ident3d.baselines.pixel_splits --data ROOT --overwrite`" in str(caught.value)


def test_the_command_writes_over_no_input_and_no_file_without_overwrite(fake_split, tmp_path_factory, capsys):
    existing = tmp_path_factory.mktemp("elsewhere") / "mine.json"
    existing.write_text("someone's data")
    for out, message in ((existing, "already exists"), (fake_split / "train/manifest.json", "input")):
        assert main(["--data", str(fake_split), "--out", str(out)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: --out") and message in err and err.count("\n") == 1
    assert existing.read_text() == "someone's data"

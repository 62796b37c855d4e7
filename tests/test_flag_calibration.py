"""The memorisation flag's calibration: its rule is the evaluator's, its table is computed from the
committed record alone, and the partial memoriser it is measured against recalls what it stored."""

import json

import numpy as np
import pytest
import torch
from conftest import write_fake_split

from ident3d import gap_test
from ident3d.baselines import flag_calibration
from ident3d.baselines.lookup import PartialLookup, export_lookup


def record(honest_flags: dict[str, int], splits: int = 500) -> dict:
    def row(flagged):
        return {"splits": splits, "flagged": flagged, "n_public": 904, "n_fresh": 2000,
                "mean_gap": {"linear_r2": 0.001, "mcc_pearson": -0.002}}

    return {"schema": flag_calibration.SCHEMA, "track": "3dident-v2-64@1", "n_fresh": 2000, "aa_images": 5000,
            "aa_seed": 7, "test": gap_test.described(), "models": {
                "pixels": {"kind": "honest", "sha256": "0" * 64,
                           "protocols": {p: row(k) for p, k in honest_flags.items()}},
                "random-cnn": {"kind": "honest", "sha256": "2" * 64,
                               "protocols": {p: row(0) for p in honest_flags}},
                "lookup": {"kind": "memoriser", "sha256": "1" * 64,
                           "protocols": {p: row(splits) for p in honest_flags}}}}


def test_the_table_pools_honest_models_per_protocol_with_exact_intervals_and_judges_the_goal(tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record({"cl-ica-2021": 12, "ident3d-eval-v1": 60})))
    text = flag_calibration.markdown(path)
    assert "| pixels | honest | cl-ica-2021 | 904 / 2,000 | 500 | 12 | 12/500 = 2.4% [1.2, 4.2] |" in text
    assert "- cl-ica-2021: false alarms on honest models 12/1000 = 1.2% [0.6, 2.1]: meets the goal" in text
    assert "- ident3d-eval-v1: false alarms on honest models 60/1000 = 6.0% [4.6, 7.7]: does not meet" in text
    assert "- power against lookup: cl-ica-2021 500/500 = 100.0% [99.3, 100.0]" in text
    rates = json.loads(flag_calibration.rate_file(path))
    assert rates["protocols"]["cl-ica-2021"] == {"flagged": 12, "splits": 1000, "ci95": [0.0062, 0.0209]}
    low, high = flag_calibration.clopper_pearson(0, 72)
    assert low == 0 and high < 0.051


def test_the_evaluator_quotes_the_committed_rate_as_the_calibration_measured_it():
    from importlib.resources import files

    committed = json.loads(files("ident3d").joinpath("flag_rate.json").read_text())
    assert committed == json.loads(flag_calibration.rate_file())
    for protocol, row in committed["protocols"].items():
        assert f"{100 * row['flagged'] / row['splits']:.1f}%" in gap_test.false_alarms(protocol)


def test_the_partial_memoriser_recalls_only_the_images_it_stored(tmp_path):
    write_fake_split(tmp_path, "test", n=40, size=16)
    path = export_lookup(tmp_path, tmp_path / "partial.pt2", fraction=0.25)
    program = torch.export.load(str(path)).module()
    from ident3d.datasets import ThreeDIdent

    data = ThreeDIdent(tmp_path, "test")
    images = np.stack([data.load_array(i) for i in range(40)])
    images = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255
    out = program(images)
    assert out.shape == (40, 3 * 8 * 8 + data.latents.shape[1])
    recalled = out[:, -data.latents.shape[1]:]
    stored = (recalled != 0).any(1).numpy()
    assert stored.sum() == 10
    np.testing.assert_allclose(recalled[stored].numpy(), data.latents[stored], atol=1e-6)
    assert PartialLookup.SAME_IMAGE < 1


def test_a_model_argument_names_an_existing_file(tmp_path):
    with pytest.raises(Exception, match="NAME=FILE.pt2"):
        flag_calibration._model(f"pixels={tmp_path / 'none.pt2'}", "honest")


@pytest.mark.blender
def test_a_model_file_other_than_the_one_the_record_measured_is_refused(cpu_track_data, tmp_path):
    kept = record({"cl-ica-2021": 0})
    path, model = tmp_path / "record.json", tmp_path / "pixels.pt2"
    path.write_text(json.dumps(kept))
    model.write_bytes(b"another model")
    with pytest.raises(Exception, match="measured another honest model as 'pixels'"):
        flag_calibration.measure(cpu_track_data, tmp_path / "out", {"pixels": (model, "honest")}, splits=0,
                                 record_path=path)
    assert json.loads(path.read_text()) == kept and not (tmp_path / "out").exists()  # nothing written

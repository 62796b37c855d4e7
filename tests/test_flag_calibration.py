"""The memorisation flag's calibration: its rule is the evaluator's, its table is computed from the
committed record alone, and the partial memoriser it is measured against recalls what it stored."""

import json

import numpy as np
import pytest
import torch
from conftest import write_fake_split

from ident3d.baselines import flag_calibration
from ident3d.baselines.lookup import PartialLookup, export_lookup


def gap(above_r2: bool, above_mcc: bool, mcc_gap: float = 0.01) -> dict:
    def metric(above, value):
        return {"public": 0.5, "fresh": 0.5 - value, "fresh_ci95": [0.4, 0.6], "gap": value,
                "ci95": [value - 0.01, value + 0.01] if above else [-0.02, 0.02], "above_chance": above}
    return {"linear_r2": metric(above_r2, 0.0), "mcc_pearson": metric(above_mcc, mcc_gap)}


def test_the_table_counts_what_the_record_holds_with_exact_intervals(tmp_path):
    def rows(flags):
        return [{"draw": k, "gap": gap(False, f), "flagged": f} for k, f in enumerate(flags)]

    record = {"track": "3dident-v2-64@1", "n": 2000, "draws": [{"seed": k} for k in range(5)], "models": {
        "pixels": {"kind": "honest", "sha256": "0" * 64, "protocols": {
            "ident3d-eval-v1": rows([False] * 5), "cl-ica-2021": rows([True] + [False] * 4)}},
        "lookup": {"kind": "memoriser", "sha256": "1" * 64,
                   "protocols": {"ident3d-eval-v1": rows([True] * 5)}}}}
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    text = flag_calibration.markdown(path)
    assert "| pixels | honest | cl-ica-2021 | 5 | 1 | 1/5 = 20% [1, 72] | +0.00 | +1.00 |" in text
    assert "False alarms on honest models: 1/10 = 10% [0, 45]." in text
    assert "Power against lookup: 5/5 = 100% [48, 100]." in text
    assert "not decidable at this budget" in text  # 10 draws cannot show a rate below 5%
    low, high = flag_calibration.clopper_pearson(0, 72)
    assert low == 0 and high < 0.051  # about 72 clean draws would


def test_the_flag_fires_on_an_interval_wholly_above_zero_of_either_metric():
    from ident3d.fresh import flagged

    assert flagged(gap(False, True)) and flagged(gap(True, False)) and not flagged(gap(False, False))


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
@pytest.mark.slow
def test_a_model_file_other_than_the_one_the_record_measured_is_refused(cpu_track_data, tmp_path):
    record = {"track": "3dident-v2-64@1", "n": 2000, "draws": [], "models": {
        "pixels": {"kind": "honest", "sha256": "0" * 64, "protocols": {}}}}
    path, model = tmp_path / "record.json", tmp_path / "pixels.pt2"
    path.write_text(json.dumps(record))
    model.write_bytes(b"another model")
    with pytest.raises(Exception, match="measured another honest model as 'pixels'"):
        flag_calibration.measure(cpu_track_data, tmp_path / "out", {"pixels": (model, "honest")}, draws=0,
                                 record_path=path)
    assert json.loads(path.read_text()) == record  # nothing written

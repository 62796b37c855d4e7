"""Leaderboard entries exported for the Hugging Face Hub read back through ``huggingface_hub``'s own
card classes (installed, no network): the model card's ``model-index`` and ``.eval_results`` YAML."""

import pytest

from ident3d.cli import main
from ident3d.leaderboard.entries import load_entries
from ident3d.leaderboard.hub_export import export
from ident3d.leaderboard.ranking import scores, shown_entry, signer
from ident3d.tracks import get_track

yaml = pytest.importorskip("yaml")
hub = pytest.importorskip("huggingface_hub")
ENTRIES = load_entries()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_model_index_round_trips_through_the_model_card(entry):
    card = hub.ModelCard("---\n" + export(entry, "model-index") + "---\n\n# A model\n")
    results = card.data.eval_results
    metrics = {k: v for k, v in scores(entry).items() if v is not None}  # a verified row: its fresh draw
    assert card.data.model_name == shown_entry(entry)["name"]  # a format-1 record signs the result's name
    assert {r.metric_type: r.metric_value for r in results} == metrics
    assert {r.metric_config for r in results} == {entry["protocol"]}
    assert all(r.dataset_split == "test" and r.dataset_config == entry["dataset"] for r in results)
    assert all(bool(r.verified) == (signer(entry) is not None) for r in results)
    track = get_track(entry["dataset"])
    if track.source == "render":  # rendered tracks: the test latents' sha256
        assert {r.dataset_revision for r in results} == {track.split("test").latents_sha256}
    if entry["status"] != "reported-in-paper":  # the version it was scored under (1.0 before versions)
        scored_under = entry["result"].get("protocol_version", "1.0")
        assert all(r.metric_args["protocol_version"] == scored_under for r in results)
    again = hub.ModelCardData(model_name=card.data.model_name, eval_results=results).to_dict()
    assert again["model-index"] == yaml.safe_load(export(entry, "model-index"))["model-index"]


@pytest.mark.slow
def test_eval_results_round_trip_and_need_the_hub_dataset(capsys):
    entry = next(e for e in ENTRIES if e["status"] == "public-split")
    text = export(entry, "eval-results", "someone/3dident-v2-64")
    parsed = hub.parse_eval_result_entries(yaml.safe_load(text))
    assert {(r.task_id, r.value) for r in parsed} == {
        (f"{entry['protocol']}/{k}", v) for k, v in entry["metrics"].items() if v is not None}
    assert all(r.dataset_id == "someone/3dident-v2-64" and r.dataset_revision for r in parsed)
    assert hub.eval_result_entries_to_yaml(parsed) == yaml.safe_load(text)
    assert main(["leaderboard", "export", entry.key, "--format", "eval-results"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "--hub-dataset" in err[0]
    assert main(["leaderboard", "export", "Nobody2026Nothing"]) == 1
    assert "no entry 'Nobody2026Nothing'" in capsys.readouterr().err

"""The reproduction summary reads run folders and checks the paper's orderings."""

import json

from test_leaderboard import fake_result

from baselines.reproduction import summarize


def write_run(out, name, r2, mcc, hue_r2):
    folder = out / "runs" / name
    folder.mkdir(parents=True)
    v1 = fake_result(r2, mcc)
    for p in v1["per_latent"][7:]:
        p["linear_r2"] = hue_r2
    (folder / "result.json").write_text(json.dumps(v1))
    (folder / "result-cl-ica-2021.json").write_text(json.dumps(fake_result(r2, mcc, protocol="cl-ica-2021")))
    config = {"iterations": 800, "batch_size": 256, "positives": "latent"}
    (folder / "config.json").write_text(json.dumps(config))
    # two equal log windows at 1024 and 512 images/s: 683 images/s overall (the harmonic mean), so
    # 800 steps of 512 images take 10.0 minutes
    (folder / "log.jsonl").write_text('{"images_per_s": 1024}\n{"images_per_s": 512}\n')


def test_summary_reports_orderings_and_hues(tmp_path):
    write_run(tmp_path, "v2-normal-box", 0.9, 0.9, 0.95)
    write_run(tmp_path, "v2-normal-unbounded", 0.88, 0.6, 0.9)
    write_run(tmp_path, "v2-normal-sphere-vmf", 0.87, 0.5, 0.9)
    write_run(tmp_path, "legacy-normal-box", 0.8, 0.8, 0.4)
    text = summarize(tmp_path)
    assert "Sphere R²: does not hold: v2-normal-box 90.00 vs v2-normal-sphere-vmf 87.00" in text
    assert "Box MCC well above Unbounded MCC: holds: v2-normal-box 90.00 vs v2-normal-unbounded 60.00" in text
    assert "| object_hue | 95.00 / 90.00 | 40.00 / 80.00 |" in text
    assert "800 steps at batch 256" in text
    assert "| v2-normal-box | 90.00 | 90.00 | 90.00 |" in text and "| 683 | 10.0 |" in text
    assert "| ground_hue | 40.00 | 95.00 | 90.00 | 90.00 |" in text  # every latent, runs sorted by name

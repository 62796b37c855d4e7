"""The synthetic experiments off the CPU (baselines/synthetic/device_sampling.py): torch draws on the
training device the distributions numpy draws on the CPU, for every process of the tables; a run with
the device sampler trains, says so in its result, and never resumes with the other sampler. The GPU
code path is the torch sampler's, run here on the CPU."""

import numpy as np
import pytest
import torch
from scipy.stats import ks_2samp

from ident3d.baselines.synthetic import device_sampling
from ident3d.baselines.synthetic import run as run_module
from ident3d.baselines.synthetic.processes import BOX
from ident3d.baselines.synthetic.run import Budget, run
from ident3d.baselines.synthetic.table import get_row, rows
from ident3d.errors import TrainingError

N = 20_000
PROCESSES = {}
for _row in rows().values():
    PROCESSES.setdefault(_row.process, _row.id)  # one row per distinct process


@pytest.mark.parametrize("row_id", sorted(PROCESSES.values()))
def test_torch_draws_the_distributions_numpy_draws(row_id):
    process = get_row(row_id).process
    z_np, pos_np = process.pairs(np.random.default_rng(1), N)
    z_t, pos_t = (a.numpy() for a in device_sampling.pairs(
        process, device_sampling.step_generator(torch.device("cpu"), 1, 0), N))
    p_values = [ks_2samp(z_np[:, j], z_t[:, j]).pvalue for j in range(process.dim)]
    p_values += [ks_2samp((pos_np - z_np)[:, j], (pos_t - z_t)[:, j]).pvalue for j in range(process.dim)]
    distance_np, distance_t = (np.linalg.norm(p - z, axis=1) for p, z in ((pos_np, z_np), (pos_t, z_t)))
    p_values.append(ks_2samp(distance_np, distance_t).pvalue)
    assert min(p_values) > 1e-4, f"{row_id}: a coordinate's distribution differs (p = {min(p_values):.2g})"
    if process.space == "box":
        assert BOX[0] <= pos_t.min() and pos_t.max() <= BOX[1]
    if process.space == "sphere":
        assert np.allclose(np.linalg.norm(np.concatenate([z_t, pos_t]), axis=1), 1.0)


def test_a_steps_draw_is_a_function_of_seed_and_step():
    process = get_row("T2.2").process  # GenNorm positives: the gamma draws take the generator too
    cpu = torch.device("cpu")
    first, again, other = (device_sampling.pairs(process, device_sampling.step_generator(cpu, 3, step), 64)
                           for step in (5, 5, 6))
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[1], other[1])


TINY = Budget(steps=4, batch_size=16, eval_every=2)


def test_a_run_with_the_device_sampler_trains_and_says_which_sampler_drew_its_pairs(tmp_path):
    import json

    path = run(get_row("T2.2"), 0, TINY, tmp_path, progress=False, device="cpu", sampler="torch")
    result = json.loads(path.read_text())
    assert (result["device"], result["sampler"]) == ("cpu", "torch")
    assert [point["step"] for point in result["curve"]] == [2, 4] and np.isfinite(result["r2"])
    plain = run(get_row("T2.2"), 0, TINY, tmp_path / "np", progress=False, device="cpu")
    plain = json.loads(plain.read_text())
    assert plain["sampler"] == "numpy" and plain["r2"] != result["r2"]  # other pairs, same distribution


def test_a_run_resumes_only_with_the_sampler_it_began_with(tmp_path, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("stopped before writing the result")

    monkeypatch.setattr(run_module, "_write", crash)
    with pytest.raises(RuntimeError, match="stopped"):
        run(get_row("T2.2"), 0, TINY, tmp_path, progress=False, device="cpu", sampler="torch")
    assert list(tmp_path.glob(".*.checkpoint.safetensors"))
    with pytest.raises(TrainingError, match="drawn by the torch sampler.*Fix: resume on the device it began"):
        run(get_row("T2.2"), 0, TINY, tmp_path, progress=False, device="cpu")


@pytest.mark.gpu
def test_a_row_trains_on_cuda_with_its_pairs_drawn_there(tmp_path):
    import json

    result = json.loads(run(get_row("T2.1"), 0, TINY, tmp_path, progress=False, device="cuda").read_text())
    assert result["device"].startswith("cuda") and result["sampler"] == "torch" and np.isfinite(result["r2"])

"""The synthetic experiments off the CPU (baselines/synthetic/device_sampling.py): torch draws on the
training device the distributions numpy draws on the CPU, for every process of the tables; a run with
the device sampler trains, says so in its result, and never resumes with the other sampler. The GPU
code path is the torch sampler's, run here on the CPU."""

import numpy as np
import pytest
import torch
from scipy.stats import ks_2samp
from torch.utils._python_dispatch import TorchDispatchMode

from ident3d.baselines.synthetic import device_sampling
from ident3d.baselines.synthetic import run as run_module
from ident3d.baselines.synthetic.budget import Budget
from ident3d.baselines.synthetic.processes import BOX
from ident3d.baselines.synthetic.run import run
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


class HostSyncs(TorchDispatchMode):
    """Counts the operators that make a CUDA stream wait for the host: reading a value back
    (item, is_nonzero, equal), and shapes that depend on values (nonzero, masked_select, unique, and
    indexing or assigning with a boolean mask)."""

    READS_VALUES = {"_local_scalar_dense", "item", "is_nonzero", "equal", "nonzero", "masked_select",
                    "_unique2", "unique_dim", "unique_consecutive"}

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name.split("::")[-1]
        masks = [a for a in (args[1] if name in ("index", "index_put", "index_put_") and len(args) > 1
                             else ()) if isinstance(a, torch.Tensor) and a.dtype == torch.bool]
        if name in self.READS_VALUES or masks:
            self.found.append(name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("row_id", sorted(PROCESSES.values()))
def test_a_steps_pairs_are_drawn_without_waiting_for_the_host(row_id):
    process = get_row(row_id).process
    device_sampling.proposals_for(process)  # the one pilot of a process, before the first step
    generator = device_sampling.step_generator(torch.device("cpu"), 0, 1)
    with HostSyncs() as counted:
        z, positive = device_sampling.pairs(process, generator, 6144)
    assert counted.found == [], f"{row_id}: {len(counted.found)} host syncs per step ({set(counted.found)})"
    assert z.shape == positive.shape == (6144, process.dim) and torch.isfinite(positive).all()


def test_the_proposals_leave_a_draw_unaccepted_with_negligible_probability():
    """Measured on each draw's own acceptance (per anchor, not on average): the rejection samplers'
    chance of a draw ending on an unaccepted proposal stays below 1e-9 for the worst anchor seen."""
    g = torch.Generator("cpu").manual_seed(7)
    for row_id in sorted(PROCESSES.values()):
        process = get_row(row_id).process
        if process.space != "box" and process.conditional not in ("vmf", "anisotropic-normal"):
            continue
        anchors = device_sampling.marginal(process, g, 64)
        _, accepted = device_sampling._proposals(process, g, anchors)(2000)
        worst = float(accepted.double().mean(0).min())
        assert (1 - worst) ** device_sampling.proposals_for(process) < 1e-9, row_id


def test_a_run_records_its_precision_wall_time_device_and_versions_and_bf16_is_its_own_result(tmp_path):
    import json

    plain = json.loads(run(get_row("T2.2"), 0, TINY, tmp_path, progress=False, device="cpu").read_text())
    assert "precision" not in plain["budget"]  # fp32, as every result before the option said
    assert plain["wall_seconds"] > 0 and plain["torch"] == torch.__version__ and "cuda" in plain
    assert "threads" in plain["device_name"]
    bf16 = run(get_row("T2.2"), 0, Budget(steps=4, batch_size=16, eval_every=2, precision="bf16"), tmp_path,
               progress=False, device="cpu")
    assert bf16.name.endswith("-bf16.json")
    result = json.loads(bf16.read_text())
    assert result["budget"]["precision"] == "bf16"
    assert np.isfinite(result["r2"]) and result["r2"] != plain["r2"]
    assert Budget.parse(plain["budget"], "a result", complete=True) == Budget(**{**plain["budget"]})
    with pytest.raises(TrainingError, match="TF32 is a mode of CUDA matmuls"):
        run(get_row("T2.2"), 0, Budget(steps=4, precision="tf32"), tmp_path, progress=False, device="cpu")

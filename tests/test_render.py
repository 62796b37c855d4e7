"""Real Blender renders, tiny: 32 px and 2 samples."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import processes_in_group
from PIL import Image

from ident3d.errors import LatentError, ManifestMismatchError, RenderError
from ident3d.layout import SplitLayout
from ident3d.render.job import plan_job, render_split
from ident3d.render.settings import resolve_settings
from ident3d.variants import get_variant

pytestmark = pytest.mark.blender
TINY = resolve_settings("preview", resolution=32, samples=2)


def pixels(root: Path, split: str = "train") -> np.ndarray:
    files = sorted((root / split / "images").glob("[!.]*.png"))
    return np.stack([np.asarray(Image.open(f).convert("RGB")) for f in files])


def render(root, n=6, seed=0, variant="v2", latents=None, settings=TINY, **kw):
    job = plan_job(root, "train", n=n, seed=seed, variant=variant, settings=settings,
                   latents_file=latents)
    return render_split(job, progress=False, **kw)


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "render", *args],
                          capture_output=True, text=True, **kw)


def test_same_job_gives_same_pixels_and_a_full_manifest(tmp_path):
    render(tmp_path / "a")
    render(tmp_path / "b", workers=2)
    a, b = pixels(tmp_path / "a"), pixels(tmp_path / "b")
    assert a.shape == (6, 32, 32, 3)
    np.testing.assert_array_equal(a, b)
    manifest = json.loads((tmp_path / "a/train/manifest.json").read_text())
    assert manifest["n"] == 6 and manifest["padding"] == 1 and manifest["variant"] == "v2"
    assert len(manifest["files"]) == 6 and len(manifest["factors"]) == 10
    assert manifest["renderer"]["blender"] == "5.0.1"
    assert 0 < min(manifest["image_std"]) and max(manifest["image_mean"]) < 1
    np.testing.assert_allclose(manifest["image_mean"], a.reshape(-1, 3).mean(0) / 255, atol=1e-5)
    raw = np.load(tmp_path / "a/train/raw_latents.npy")
    assert raw.shape == (6, 10) and raw.dtype == np.float32
    # no render date or timings in the files: the same setting gives the same bytes, so checksums agree
    assert manifest["files"] == json.loads((tmp_path / "b/train/manifest.json").read_text())["files"]



def test_an_image_is_the_same_after_others_in_one_session_as_alone(tmp_path):
    """Workers keep Cycles' session between images (persistent data): an image rendered after others,
    with other shapes shown and hidden, has the pixels it has when its process renders it first."""
    render(tmp_path / "together", n=4, seed=3, variant="objects")
    raw = np.load(tmp_path / "together/train/raw_latents.npy")
    shapes = get_variant("objects").scene_params(raw)
    assert len({shapes.row(k)["object_shape"] for k in range(len(raw))}) > 1  # shown and hidden in turn
    alone = []
    for i in range(len(raw)):
        np.save(tmp_path / f"row{i}.npy", raw[i:i + 1])
        render(tmp_path / f"alone{i}", variant="objects", latents=tmp_path / f"row{i}.npy", n=None)
        alone.append(pixels(tmp_path / f"alone{i}")[0])
    np.testing.assert_array_equal(pixels(tmp_path / "together"), np.stack(alone))


def _sigint_blocked(answer) -> None:
    answer.put(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))


def test_workers_started_from_another_thread_never_see_sigint():
    """A fresh draw's workers start from a thread beside the evaluator's main one, where SIGINT's
    handler cannot be changed: they start with it blocked instead, so a Ctrl-C while they import is
    the parent's to handle (their initialiser ignores it from then on)."""
    import multiprocessing
    import threading

    from ident3d.render import engines

    ctx = multiprocessing.get_context("spawn")
    answer = ctx.Queue()

    def start() -> None:
        with engines._sigint_ignored(), engines.caller_main_hidden():
            worker = ctx.Process(target=_sigint_blocked, args=(answer,))
            worker.start()
        worker.join()

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    assert answer.get(timeout=30) is True


def test_workers_leave_no_temp_folders(tmp_path, monkeypatch):
    # Blender makes a blender_XXXXXX folder under TMPDIR in every process; terminated pool workers
    # never remove theirs, so without the scratch folder each render would leave one per worker.
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    render(tmp_path / "data", n=2, workers=2)
    assert len(list((tmp_path / "data/train/images").glob("*.png"))) == 2
    assert list(temp.iterdir()) == []


WORKER_THREADS = """
import os, sys
from ident3d.render import worker
from ident3d.render.settings import resolve_settings
worker.init_worker(resolve_settings("preview", resolution=32, samples=2), threads={threads})
assert worker._startup_error is None, worker._startup_error
print(len(os.listdir("/proc/self/task")), sorted(os.sched_getaffinity(0)), file=sys.stderr)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to share out")
def test_a_worker_of_one_thread_has_no_spare_scheduler_thread_and_keeps_every_cpu():
    """Blender sizes its task scheduler from the CPUs it may use when bpy is imported; a spare
    scheduler thread spins after every image, taking CPU from the other workers."""
    def threads_and_cpus(threads: int | None) -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-c", WORKER_THREADS.format(threads=threads)],
                              capture_output=True, text=True, check=True)
        count, cpus = done.stderr.strip().splitlines()[-1].split(" ", 1)
        return int(count), cpus

    (one, cpus_after), (every, _) = threads_and_cpus(1), threads_and_cpus(None)
    assert one < every
    assert cpus_after == str(sorted(os.sched_getaffinity(0)))


def test_v2_every_latent_changes_the_image_and_legacy_hue_plateau(tmp_path):
    base = np.zeros((11, 10), dtype=np.float32)
    for k in range(10):
        base[k + 1, k] = 0.5
    np.save(tmp_path / "v2.npy", base)
    render(tmp_path / "v2", n=None, latents=tmp_path / "v2.npy",
           settings=resolve_settings("preview", resolution=48, samples=4))
    img = pixels(tmp_path / "v2").astype(int)
    for k in range(10):
        assert np.abs(img[k + 1] - img[0]).sum() > 0, f"latent {k} does not change the image"

    legacy = np.zeros((3, 10), dtype=np.float32)
    legacy[1, 7], legacy[2, 7] = -0.5, 0.5
    np.save(tmp_path / "legacy.npy", legacy)
    render(tmp_path / "legacy", n=None, latents=tmp_path / "legacy.npy", variant="legacy")
    img = pixels(tmp_path / "legacy")
    np.testing.assert_array_equal(img[0], img[1])  # the documented defect, reproduced
    assert np.abs(img[0].astype(int) - img[2]).sum() > 0


def test_sigkill_partway_then_resume_equals_uninterrupted(tmp_path):
    reference = tmp_path / "reference"
    render(reference, n=60)
    out = tmp_path / "killed"
    args = ["--out", str(out), "--n", "60", "--preset", "preview", "--resolution", "32",
            "--samples", "2", "--workers", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "ident3d.cli", "-q", "render", *args],
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    images = out / "train" / "images"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(images.glob("*.png"))) < 10:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(images.glob("*.png")))
    assert 0 < done_before < 60, "the kill should land partway"
    assert not (out / "train/manifest.json").exists()
    assert cli(*args).returncode == 0
    np.testing.assert_array_equal(pixels(out), pixels(reference))
    # Every image once, and no temporary file of a killed worker left behind.
    assert sorted(p.name for p in images.iterdir()) == [f"{i:02d}.png" for i in range(60)]
    before = (out / "train/manifest.json").stat().st_mtime_ns
    assert cli(*args).returncode == 0  # a finished dataset is a no-op
    assert (out / "train/manifest.json").stat().st_mtime_ns == before


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_the_render_at_once_leaves_no_process_and_resumes(tmp_path, signum):
    """Ctrl-C reaches the whole foreground group; a scheduler's SIGTERM reaches the main process."""
    out = tmp_path / "data"
    args = ["--data", str(out), "--n", "400", "--preset", "preview", "--resolution", "32",
            "--samples", "1", "--workers", "2"]
    # A shell's background job inherits SIGINT ignored, and the render rightly keeps ignoring it; the
    # render under test is started as a foreground command is, with SIGINT at its default.
    proc = subprocess.Popen([sys.executable, "-m", "ident3d.cli", "-q", "render", *args],
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    images = out / "train" / "images"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(images.glob("[!.]*.png"))) < 10:
        time.sleep(0.05)
    sent = time.monotonic()
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    stopped = time.monotonic() - sent
    done = len(list(images.glob("[!.]*.png")))
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines() == [
        "error: interrupted. Fix: re-run the same command; finished work is kept."]
    assert done < 400, f"the whole split was rendered after the signal ({stopped:.1f} s)"
    time.sleep(0.5)
    assert processes_in_group(proc.pid) == []  # no worker, no resource tracker left behind
    assert cli(*args).returncode == 0
    assert sorted(p.name for p in images.iterdir()) == [f"{i:03d}.png" for i in range(400)]


def test_shards_merge_into_the_same_dataset(tmp_path):
    whole = tmp_path / "whole"
    render(whole, n=8)
    sharded = tmp_path / "sharded"
    assert render(sharded, n=8, shard=(1, 2)) is None
    assert not (sharded / "train/manifest.json").exists()
    assert render(sharded, n=8, shard=(0, 2)) is not None
    np.testing.assert_array_equal(pixels(sharded), pixels(whole))
    a = json.loads((whole / "train/manifest.json").read_text())
    b = json.loads((sharded / "train/manifest.json").read_text())
    assert a["image_mean"] == b["image_mean"] and a["files"].keys() == b["files"].keys()
    assert not (sharded / "train/shards").exists()


def test_ray_engine_renders_like_local(tmp_path):
    pytest.importorskip("ray")
    local = tmp_path / "local"
    render(local, n=8)
    ray_root = tmp_path / "ray"
    render(ray_root, n=8, engine="ray", workers=2)
    np.testing.assert_array_equal(pixels(ray_root), pixels(local))


def test_mixing_settings_is_refused(tmp_path):
    render(tmp_path, n=4)
    for change in ({"variant": "legacy"}, {"seed": 1}, {"n": 3},
                   {"settings": resolve_settings("preview", resolution=32, samples=3)}):
        with pytest.raises(ManifestMismatchError, match="other settings"):
            render(tmp_path, **{"n": 4, **change})
    with pytest.raises(ManifestMismatchError, match="holds a render of 4 images; this asks for 5. Fix: "
                       "render the larger split into a new folder with --grow-from"):
        render(tmp_path, n=5)


def test_the_denoiser_prefilter_is_applied_deterministically_and_old_manifests_keep_matching(tmp_path):
    accurate = replace(TINY, denoise=True)
    fast = replace(accurate, denoise_prefilter="fast")
    render(tmp_path / "accurate", n=3, settings=accurate)
    render(tmp_path / "fast", n=3, settings=fast)
    render(tmp_path / "fast-again", n=3, settings=fast, workers=2)
    np.testing.assert_array_equal(pixels(tmp_path / "fast"), pixels(tmp_path / "fast-again"))
    assert np.abs(pixels(tmp_path / "fast").astype(int) - pixels(tmp_path / "accurate")).max() > 0
    # Blender's defaults stay out of the manifest, as in every split rendered before the fields existed
    stored = json.loads((tmp_path / "accurate/train/manifest.json").read_text())["render_settings"]
    assert "denoise_prefilter" not in stored and "denoise_quality" not in stored
    assert json.loads((tmp_path / "fast/train/manifest.json").read_text())[
        "render_settings"]["denoise_prefilter"] == "fast"
    with pytest.raises(ManifestMismatchError, match="other settings"):
        render(tmp_path / "accurate", n=3, settings=fast)


@pytest.mark.parametrize("field,value", [("denoise_prefilter", "fastest"), ("denoise_quality", "HIGH")])
def test_unknown_denoiser_settings_are_refused_with_the_choices(field, value):
    with pytest.raises(RenderError, match=f"{field} {value!r}: expected one of"):
        replace(TINY, **{field: value})


@pytest.mark.parametrize("bad,fragment", [
    (np.full((3, 10), np.nan), "row 0, column 0"),
    (np.full((3, 10), 1.5), "row 0, column 0"),
    (np.zeros((3, 9)), "shape"),
])
def test_bad_latents_are_refused_before_writing(tmp_path, bad, fragment):
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(LatentError, match=fragment):
        render(tmp_path / "out", n=None, latents=tmp_path / "bad.npy")
    assert not (tmp_path / "out").exists()
    result = cli("--out", str(tmp_path / "out"), "--latents", str(tmp_path / "bad.npy"))
    assert result.returncode == 1 and fragment.split(",")[0] in result.stderr
    assert not (tmp_path / "out").exists()


def test_missing_bpy_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['bpy'] = None\n"
            "from ident3d.extras import require\n"
            "try:\n    require('bpy')\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert 'pip install "ident3d[render]"' in out


def test_layout_padding_matches_published_rule():
    from ident3d.layout import padding_width

    assert [padding_width(n) for n in (1, 10, 11, 1000, 25000, 250000)] == [1, 1, 2, 3, 5, 6]
    assert SplitLayout(Path("r"), "test").image(7, 5).name == "00007.png"


def test_traverse_cli_writes_a_labelled_grid_with_one_row_per_latent(tmp_path):
    out = tmp_path / "fig.png"
    result = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "traverse", "--out", str(out),
                             "--steps", "3", "--resolution", "32", "--samples", "2"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    from ident3d.render.traverse import CAPTION_HEIGHT, LABEL_WIDTH

    grid = np.asarray(Image.open(out).convert("RGB")).astype(int)
    height = 32 + CAPTION_HEIGHT  # an image, then the strip that captions it with the swept value
    assert grid.shape == (10 * height, LABEL_WIDTH + 3 * 32, 3)
    rows = grid[:, LABEL_WIDTH:].reshape(10, height, 3 * 32, 3)
    assert (rows[:, 32:] < 128).any(axis=(1, 2, 3)).all(), "a row's values are not captioned"
    tiles = rows[:, :32].reshape(10, 32, 3, 32, 3).transpose(0, 2, 1, 3, 4)
    for row in range(10):  # the centre column is the base latent in every row: same pixels
        np.testing.assert_array_equal(tiles[row, 1], tiles[0, 1])
        assert np.abs(tiles[row, 0] - tiles[row, 2]).mean() > 0.5, f"row {row} does not change"
    assert grid[:, :LABEL_WIDTH].min() < 128, "row labels are missing"
    command = [sys.executable, "-m", "ident3d.cli", "-q", "traverse", "--out", str(out), "--steps", "3",
               "--resolution", "32", "--samples", "2"]
    refused = subprocess.run(command, capture_output=True, text=True)
    assert refused.returncode == 1 and "already exists" in refused.stderr and "--overwrite" in refused.stderr
    again = subprocess.run([*command, "--overwrite"], capture_output=True, text=True)
    assert again.returncode == 0 and np.array_equal(np.asarray(Image.open(out).convert("RGB")), grid)
    bad = subprocess.run([sys.executable, "-m", "ident3d.cli", "traverse", "--out", str(tmp_path / "f.jpg")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "f.jpg" in bad.stderr and ".png" in bad.stderr


def test_a_missing_gpu_stops_the_job_at_once_with_one_line(tmp_path):
    start = time.perf_counter()
    result = cli("--out", str(tmp_path / "gpu"), "--n", "2", "--preset", "preview", "--device", "gpu",
                 timeout=300)  # before the fix the pool restarted the failing worker forever
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --device gpu") and "Fix:" in lines[0]
    assert time.perf_counter() - start < 120
    assert not list((tmp_path / "gpu/train/images").glob("*.png"))


def test_a_worker_that_cannot_start_ends_the_job(tmp_path, monkeypatch):
    from ident3d.render import engines

    tasks = [(0, str(tmp_path / "0.png"), {})]
    broken = resolve_settings("preview", resolution=32, samples=2, device="gpu")
    # without the probe, the worker itself finds no GPU while building the scene
    monkeypatch.setattr(engines, "check_device", lambda settings, scratch: None)
    with pytest.raises(Exception, match="could not start"):
        engines.run_local(broken, tasks, 1, lambda n: None)


def test_the_render_command_repairs_missing_and_truncated_images_of_a_finished_split(tmp_path):
    args = ("--out", str(tmp_path), "--n", "5", "--preset", "preview", "--resolution", "32",
            "--samples", "2")
    assert cli(*args).returncode == 0
    before = pixels(tmp_path)
    lay = SplitLayout(tmp_path, "train")
    lay.image(1, 1).unlink()
    lay.image(3, 1).write_bytes(lay.image(3, 1).read_bytes()[:200])
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    np.testing.assert_array_equal(pixels(tmp_path), before)
    check = subprocess.run([sys.executable, "-m", "ident3d.cli", "audit", str(tmp_path)],
                           capture_output=True, text=True)
    assert check.returncode == 0 and "0 problems" in check.stdout, check.stdout


def test_every_fix_for_a_broken_rendered_split_is_a_command_that_works(tmp_path):
    import shlex

    from ident3d.datasets import ThreeDIdent
    from ident3d.errors import DatasetError

    assert cli("--out", str(tmp_path), "--split", "test", "--n", "4", "--preset", "preview",
               "--resolution", "32", "--samples", "2").returncode == 0
    before = pixels(tmp_path, "test")
    lay = SplitLayout(tmp_path, "test")
    damage = [lambda: lay.image(2, 1).unlink(),
              lambda: lay.image(0, 1).write_bytes(b"\x89PNG\r\n\x1a\n garbage IEND\xaeB`\x82"),
              lambda: lay.image(3, 1).write_bytes(lay.image(3, 1).read_bytes()[:-30])]
    for broken_index, break_it in zip((2, 0, 3), damage, strict=True):
        break_it()
        with pytest.raises(DatasetError) as error:
            ThreeDIdent(tmp_path, "test").load_array(broken_index)
        command = str(error.value).split("`")[1]
        assert command.startswith("ident3d audit"), str(error.value)
        fixed = subprocess.run([sys.executable, "-m", "ident3d.cli", *shlex.split(command)[1:]],
                               capture_output=True, text=True)
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        np.testing.assert_array_equal(pixels(tmp_path, "test"), before)


def test_a_killed_worker_ends_the_job_and_the_rerun_finishes_it(tmp_path):
    args = ("--out", str(tmp_path), "--n", "300", "--preset", "preview", "--resolution", "32",
            "--samples", "1", "--workers", "2")
    job = subprocess.Popen([sys.executable, "-m", "ident3d.cli", "-q", "render", *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    images = tmp_path / "train/images"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(images.glob("[!.]*.png"))) < 20:
        time.sleep(0.2)
    workers = subprocess.run(["pgrep", "-f", "-P", str(job.pid), "multiprocessing.spawn"],
                             capture_output=True, text=True).stdout.split()
    assert workers, "no render worker found"
    os.kill(int(workers[-1]), signal.SIGKILL)
    _, err = job.communicate(timeout=300)  # before the fix the job waited forever for the lost chunk
    if job.returncode == 0:  # the killed worker had already finished its last chunk
        pytest.skip("the worker was killed after its last chunk")
    assert job.returncode == 1 and err.strip().startswith("error: a render worker died"), err
    assert cli(*args).returncode == 0
    assert len(list(images.glob("[!.]*.png"))) == 300



@pytest.fixture(scope="module")
def six_images(tmp_path_factory) -> Path:
    """A finished 6-image split to grow (read-only: copy it before changing it)."""
    root = tmp_path_factory.mktemp("six")
    render(root, n=6)
    return root / "train"


def test_a_grown_split_is_the_larger_render_reuses_the_old_images_and_never_writes_the_source(
        tmp_path, six_images):
    import shutil

    grown, source = tmp_path / "grown", tmp_path / "small/train"
    shutil.copytree(six_images, source)
    SplitLayout(source.parent, "train").image(4, 1).write_bytes(b"not the image the manifest names")
    before = {p.name: p.read_bytes() for p in sorted(source.rglob("*")) if p.is_file()}
    args = ("--data", str(grown), "--n", "11", "--grow-from", str(source))
    result = subprocess.run([sys.executable, "-m", "ident3d.cli", "render", *args],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "reused 5 image(s)" in result.stdout
    assert "4.png" in result.stderr and "differ from its manifest" in result.stderr  # rendered anew
    assert {p.name: p.read_bytes() for p in sorted(source.rglob("*")) if p.is_file()} == before
    assert os.stat(grown / "train/images/00.png").st_ino == os.stat(source / "images/0.png").st_ino
    render(tmp_path / "direct", n=11)  # the same split rendered at its full size in one go
    np.testing.assert_array_equal(pixels(grown), pixels(tmp_path / "direct"))
    ours, theirs = (json.loads((root / "train/manifest.json").read_text())
                    for root in (grown, tmp_path / "direct"))
    assert ours == theirs
    assert not list((grown / "train/images").glob(".*"))
    again = cli(*args)  # resuming a finished growth renders nothing and changes nothing
    assert again.returncode == 0, again.stderr
    assert json.loads((grown / "train/manifest.json").read_text()) == theirs


@pytest.mark.parametrize("args, fragment", [
    (("--n", "11", "--seed", "3"), "--seed would change them"),
    (("--n", "4"), "already holds 6 images"),
    ((), "needs --n"),
    (("--n", "11", "--data", "SOURCE_ROOT", "--split", "train"), "never in place"),
])
def test_growing_refuses_what_would_change_or_overwrite_the_data(tmp_path, six_images, args, fragment):
    args = tuple(str(six_images.parent) if a == "SOURCE_ROOT" else a for a in args)
    data = () if "--data" in args else ("--data", str(tmp_path / "grown"))
    result = cli(*data, "--grow-from", str(six_images), *args)
    assert result.returncode != 0 and fragment in result.stderr, result.stderr
    assert result.stderr.count("error:") == 1
    assert not (tmp_path / "grown").exists()


def test_a_paired_split_grows_by_pairs_with_the_same_positives(tmp_path):
    from ident3d.render.grow import plan_growth, reuse_images

    pairs = {"conditional": "laplace", "scale": 0.05, "beta": None}
    render_split(plan_job(tmp_path / "small", "train", n=2, seed=4, variant="v2", settings=TINY,
                          pairs=pairs), progress=False)
    job = plan_growth(tmp_path / "small/train", tmp_path / "grown", "train", n=3)
    assert reuse_images(job, tmp_path / "small/train") == 4
    manifest = json.loads(render_split(job, progress=False).read_text())
    assert manifest["n"] == 6 and manifest["pairs"]["conditional"] == "laplace"
    direct = plan_job(tmp_path / "unused", "train", n=3, seed=4, variant="v2", settings=TINY, pairs=pairs)
    np.testing.assert_array_equal(np.load(tmp_path / "grown/train/raw_latents.npy"), direct.raw)


@pytest.mark.parametrize("field, value", [("n", "6"), ("seeds", None), ("render_settings", {"bogus": 1}),
                                          ("files", []), ("renderer", "ident3d.render")])
def test_a_crafted_source_manifest_gets_one_line_and_nothing_is_written(tmp_path, six_images, field, value):
    import shutil

    source = tmp_path / "small/train"
    shutil.copytree(six_images, source)
    manifest = json.loads((source / "manifest.json").read_text())
    (source / "manifest.json").write_text(json.dumps({**manifest, field: value}))
    result = cli("--data", str(tmp_path / "grown"), "--n", "11", "--grow-from", str(source))
    assert result.returncode != 0 and result.stderr.count("error:") == 1, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "grown").exists()

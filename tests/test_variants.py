"""Variants as data: built-in specs, users' spec files, object classes, the causal model, captions."""

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import write_fake_split
from scipy import stats

from ident3d.captions import caption, captions
from ident3d.card import dataset_card
from ident3d.datasets import ThreeDIdent
from ident3d.errors import DatasetError, LatentError
from ident3d.latents import sample_uniform
from ident3d.metrics import class_accuracy
from ident3d.pairs import ContrastivePairs
from ident3d.render.shapes import BUILDERS, SIZE, shape_mesh
from ident3d.render.traverse import traversal_latents
from ident3d.scene import QUANTITIES, TEAPOT_SIZE
from ident3d.variants import VariantError, builtin_names, get_variant, variant_from_dict

USER_SPEC = """
name = "lift"
title = "Height and spin only"
[[latents]]
name = "height"
drives = "object_z"
scale = 2
offset = 3.0
[[latents]]
name = "spin"
drives = "rotation_gamma"
scale = "pi"
[[latents]]
name = "tint"
drives = "object_hue"
scale = "1/8"
"""


def test_builtin_variants_and_the_frozen_two():
    assert {"v2", "legacy", "objects", "causal"} <= set(builtin_names())
    v2, legacy, objects = get_variant("v2"), get_variant("legacy"), get_variant("objects")
    assert v2.names == legacy.names and v2.n_latents == 10
    assert [f.scale for f in v2.factors] == [f.scale for f in legacy.factors]
    assert (v2.colour, legacy.colour) == ("v2", "legacy")
    assert np.array_equal(v2.sample(500, 3), sample_uniform(500, 3))  # the tracks' latents
    assert objects.names[:10] == v2.names and objects.names[10] == "object_class"
    assert len(objects.factors[10].classes) >= 7 and objects.factors[10].classes[0] == "teapot"


def test_a_users_spec_file_round_trips_and_undriven_quantities_keep_their_defaults(tmp_path):
    path = tmp_path / "lift.toml"
    path.write_text(USER_SPEC)
    v = get_variant(path)
    assert v.names == ("height", "spin", "tint") and v.source == str(path)
    again = variant_from_dict(json.loads(json.dumps(v.to_dict())), "copy")
    assert again.factors == v.factors and again.colour == v.colour
    p = v.scene_params(np.array([[1.0, -1.0, 0.5]]))
    assert np.allclose(p.object_location[0], [0.0, 0.0, 5.0])  # x, y at their defaults; z = 2u + 3
    assert np.isclose(p.object_rotation[0, 2], -np.pi) and np.allclose(p.object_rotation[0, :2], 0)
    assert np.allclose(p.spot_location[0, :2], [0.0, 4.0])  # spotlight angle at its default 0
    assert p.object_shape[0] == "teapot"
    assert "| 0 | `height` |" in dataset_card(v) and "z = 2u + 3.0000" in dataset_card(v)


@pytest.mark.parametrize("text, fragment", [
    ('name = "x"\ncolor = "v2"\n[[latents]]\nname = "a"\ndrives = "object_x"', "unknown key(s) color"),
    ('name = "x"\n[[latents]]\nname = "a"\ndrives = "object_w"', "drives 'object_w'; expected one of"),
    ('name = "x"\n[[latents]]\nname = "a"\ndrives = "object_x"\n[[latents]]\nname = "b"\n'
     'drives = "object_x"', "object_x driven by more than one latent"),
    ('name = "x"\n[[latents]]\nname = "a"\ndrives = "object_x"\nmechanism = { weights = { b = 1 }, '
     'noise = 0.1 }\n[[latents]]\nname = "b"\ndrives = "object_y"\nmechanism = { weights = { a = 1 }, '
     'noise = 0.1 }', "form a cycle"),
    ('extends = "objects"\nname = "x"\n[[latents]]\nname = "object_hue"\n'
     'mechanism = { means = { object_class = [0.1, 0.2] }, noise = 0.1 }', "one per class"),
    ('name = "x"\n[[latents]]\nname = "a"\ndrives = "object_x"\nscale = "tau/2"', "scale 'tau/2'"),
    ('name = "x"\n[[latents]]\nname = "c"\ndrives = "object_class"\nclasses = ["teapot", "dragon"]',
     "distinct shapes of teapot"),
    ('name = "x"\n[[latents', "not valid TOML"),
])
def test_a_broken_spec_names_the_file_and_what_is_wrong(tmp_path, text, fragment):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    with pytest.raises(VariantError, match="broken.toml") as error:
        get_variant(path)
    assert fragment in str(error.value)


def test_unknown_variant_names_the_choices():
    with pytest.raises(VariantError, match="unknown variant 'v3'.*causal.*legacy"):
        get_variant("v3")


def test_class_latents_are_uniform_kept_in_pairs_and_checked():
    v = get_variant("objects")
    z = v.sample(14000, 0)
    counts = np.bincount(z[:, 10].astype(int), minlength=7)
    assert stats.chisquare(counts).pvalue > 1e-3
    pairs = v.sample_pairs(2000, 1, scale=0.1)
    assert np.array_equal(pairs[0::2, 10], pairs[1::2, 10])
    assert 0.05 < np.std(pairs[1::2, :10] - pairs[0::2, :10]) < 0.15
    bad = z[:3].copy()
    bad[1, 10] = 2.5
    with pytest.raises(LatentError, match=r"row 1, column 10 \(object_class\).*class index 0 \.\. 6"):
        v.check_raw(bad)
    bad[1, 10] = 7
    with pytest.raises(LatentError, match="row 1, column 10"):
        v.check_raw(bad)


def _residual(y: np.ndarray, parents: list[np.ndarray]) -> np.ndarray:
    """y minus its least-squares fit on flexible features of its parents (cubic, or one-hot)."""
    columns = [np.ones(len(y))]
    for p in parents:
        if np.array_equal(p, np.round(p)) and p.max() > 1:  # a class parent
            columns += [(p == c).astype(float) for c in np.unique(p)[1:]]
        else:
            columns += [p, p**2, p**3]
    x = np.stack(columns, 1)
    return y - x @ np.linalg.lstsq(x, y, rcond=None)[0]


def test_causal_variant_shows_exactly_its_declared_dependencies():
    v = get_variant("causal")
    z = v.sample(40000, 7).astype(np.float64)
    index = {f.name: f.index for f in v.factors}
    parents = {f.name: list(f.mechanism.parents) if f.mechanism else [] for f in v.factors}
    descendants = {name: set() for name in index}
    for parent, child in v.edges:  # edges come in factor order; close transitively
        for name in index:
            if parent == name or parent in descendants[name]:
                descendants[name].add(child)
    for _ in range(3):
        for name in index:
            for child in list(descendants[name]):
                descendants[name] |= descendants[child]
    limit = 5 / np.sqrt(len(z))
    for f in v.factors:
        own = [z[:, index[p]] for p in parents[f.name]]
        residual = _residual(z[:, f.index], own)
        for parent in parents[f.name]:  # every declared edge is a real dependence
            explained = 1 - residual.var() / z[:, f.index].var()
            assert explained > 0.1, (parent, f.name, explained)
        for other in index:  # local Markov: independent of every non-descendant given the parents
            if other == f.name or other in parents[f.name] or other in descendants[f.name]:
                continue
            for feature in (z[:, index[other]], z[:, index[other]] ** 2):
                r = np.corrcoef(residual, feature)[0, 1]
                assert abs(r) < limit, (f.name, other, r)
    assert set(v.edges) == {("object_class", "object_z"), ("object_y", "spotlight_angle"),
                            ("object_class", "object_hue"), ("object_hue", "ground_hue")}
    card = dataset_card(v)
    assert "object_class -> object_hue" in card and "| `ground_hue` | `object_hue` |" in card


def test_shapes_are_normalised_to_the_teapots_size():
    assert np.isclose(SIZE * 1.5, TEAPOT_SIZE, atol=1e-3)  # the object scale 1.5 gives the teapot's size
    for name in BUILDERS:
        vertices, faces = shape_mesh(name)
        extent = vertices.max(0) - vertices.min(0)
        assert np.isclose(extent.max(), SIZE) and np.allclose(vertices.max(0), -vertices.min(0))
        assert all(0 <= i < len(vertices) for face in faces for i in face) and len(faces) >= 6


def test_captions_follow_the_scene():
    v = get_variant("objects")
    z = np.zeros((2, 11), np.float32)
    z[0, 0], z[0, 1], z[0, 10] = 0.9, -0.9, 1  # front, left; monkey; hues at u = 0: red
    z[1, 2], z[1, 6], z[1, 10] = 0.9, -0.5, 5  # high; spotlight behind; cube
    text = captions(v.scene_params(z))
    assert text[0].startswith("A red monkey at the front left, above the ground, lit from the side")
    assert text[1].startswith("A red cube in the centre, high above the ground, lit from behind")
    assert text[0].endswith("on a red ground.")
    legacy = get_variant("legacy").scene_params(np.full((1, 10), -0.5, np.float32))
    assert caption(legacy, 0).startswith("A red teapot")  # the clamped plateau is named as it looks


def test_class_accuracy_read_out():
    rng = np.random.default_rng(0)
    c = rng.integers(0, 5, 2000)
    informative = np.eye(5)[c] + 0.1 * rng.normal(size=(2000, 5))
    noise = rng.normal(size=(2000, 5))
    assert class_accuracy(c[:1000], informative[:1000], c[1000:], informative[1000:], 5) > 0.99
    assert class_accuracy(c[:1000], noise[:1000], c[1000:], noise[1000:], 5) < 0.3


def test_snapped_pairs_keep_the_class_of_an_objects_split(tmp_path):
    write_fake_split(tmp_path, "train", n=600, size=8, variant="objects")
    dataset = ThreeDIdent(tmp_path, "train")
    assert dataset.factor_names[-1] == "object_class" and dataset.latents.shape == (600, 11)
    pairs = ContrastivePairs(dataset, scale=0.1, seed=0)
    anchor, positive = pairs.sample_indices(np.arange(700))
    z = dataset.latents
    assert np.array_equal(z[anchor, 10], z[positive, 10])
    assert len(np.unique(z[anchor, 10])) == 7
    shapes = dataset.variant_spec.factors[10].classes
    assert len(dataset.captions) == 600
    assert all(any(f" {shape} " in text for shape in shapes) for text in dataset.captions)
    manifest = json.loads((tmp_path / "train" / "manifest.json").read_text())
    del manifest["variant_spec"]
    manifest["variant"] = str(tmp_path / "elsewhere.toml")  # a manifest must not point us at files
    (tmp_path / "train" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match="is not built in and the manifest holds no variant_spec"):
        ThreeDIdent(tmp_path, "train")


def test_traversal_of_a_class_latent_shows_every_class():
    grid = traversal_latents(7, variant="objects")
    assert grid.shape == (77, 11)
    assert grid[70:, 10].tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert np.allclose(grid[:7, 0], np.linspace(-1, 1, 7)) and not grid[:70, 10].any()


def test_a_traversal_grid_captions_each_image_with_the_swept_value_or_class(tmp_path):
    from PIL import Image

    from ident3d.render.traverse import CAPTION_HEIGHT, LABEL_WIDTH, column_captions, compose_grid
    from ident3d.variants import get_variant

    captions = column_captions(get_variant("objects"), 7)
    assert captions[0] == ["-1.00", "-0.67", "-0.33", "+0.00", "+0.33", "+0.67", "+1.00"]
    assert captions[-1][0] == "teapot" and len(set(captions[-1])) == 7  # every class by name
    tiles = []
    for i in range(2 * 3):  # two rows of three plain 32 px tiles
        tiles.append(tmp_path / f"{i}.png")
        Image.new("RGB", (32, 32), (200, 200, 255)).save(tiles[-1])
    sheet = np.asarray(compose_grid(tiles, 3, ["a", "b"], [["-1", "0", "+1"], ["x", "y", "z"]]))
    assert sheet.shape == (2 * (32 + CAPTION_HEIGHT), LABEL_WIDTH + 3 * 32, 3)
    for row in range(2):  # dark caption text in the strip under every image
        strip = sheet[row * (32 + CAPTION_HEIGHT) + 32:(row + 1) * (32 + CAPTION_HEIGHT)]
        for col in range(3):
            assert (strip[:, LABEL_WIDTH + 32 * col:LABEL_WIDTH + 32 * (col + 1)] < 128).any(), (row, col)


def test_every_quantity_can_be_driven_and_the_help_lists_the_builtins():
    from ident3d.cli.arguments import VARIANT_HELP

    assert all(name in VARIANT_HELP for name in builtin_names())
    assert {"object_class", "object_z", "ground_hue"} <= set(QUANTITIES)


@pytest.mark.blender
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["legacy", "objects", "causal"])  # v2: test_demo, test_train
def test_a_builtin_variant_renders_loads_trains_and_evaluates(tmp_path, variant):
    from ident3d.cli import main

    data, run, spec = tmp_path / "data", tmp_path / "run", get_variant(variant)
    for split, n, seed in (("train", 96, 0), ("test", 64, 1)):
        assert main(["-q", "render", "--data", str(data), "--split", split, "--n", str(n), "--seed",
                     str(seed), "--variant", variant, "--preset", "preview", "--resolution", "32",
                     "--samples", "1", "--workers", "2"]) == 0
    test = ThreeDIdent(data, "test")
    assert test.variant == variant and test.latents.shape == (64, spec.n_latents)
    assert (data / "test" / "captions.txt").read_text().count("\n") == 64
    assert test.captions[0].split()[2] in (spec.factors[-1].classes or ("teapot",))
    assert main(["-q", "train", "--data", str(data), "--preset", "smoke", "--out", str(run),
                 "--set", "iterations=4", "--set", "batch_size=8", "--set", "eval_every=0"]) == 0
    result = json.loads((run / "result.json").read_text())
    continuous = [f.name for f in spec.factors if not f.is_class]
    assert [p["factor"] for p in result["per_latent"]] == continuous
    assert result["dataset"]["variant"] == variant
    if spec.class_columns:
        (klass,) = result["classes"]
        assert klass["factor"] == "object_class" and klass["n_classes"] == 7
        assert 0 <= klass["accuracy"] <= 1 and result["class_accuracy"] == klass["accuracy"]
        from ident3d.results import Result

        assert f"object_class    class accuracy {klass['accuracy']:.4f}" in Result(result).table()
    else:
        assert "classes" not in result


def test_a_job_record_is_what_its_file_holds_so_a_spec_variant_plans_resumes_and_finalizes(tmp_path):
    from ident3d.render.job import plan_job, prepare
    from ident3d.render.settings import resolve_settings
    from ident3d.variants import split_variant

    job = plan_job(tmp_path, "train", n=4, seed=0, variant="causal", settings=resolve_settings("preview"),
                   pairs={"style": ["object_hue", "ground_hue"]})
    written = prepare(job)  # the causal spec's class means are tuples in memory
    assert written == json.loads((tmp_path / "train" / "render_job.json").read_text())
    assert prepare(job) == written  # a second run (a resume) agrees with the record on disk
    assert split_variant(written).to_dict() == get_variant("causal").to_dict()  # what finalize reads


@pytest.mark.blender
def test_a_users_spec_renders_and_a_copy_of_v2_renders_v2s_pixels(tmp_path):
    spec = tmp_path / "lift.toml"
    spec.write_text(USER_SPEC)
    copy = tmp_path / "my-v2.toml"
    copy.write_text('extends = "v2"\nname = "my-v2"\n')
    args = ["--n", "3", "--seed", "4", "--preset", "preview", "--resolution", "32", "--samples", "1"]
    for name, variant in (("lift", str(spec)), ("mine", str(copy)), ("v2", "v2")):
        out = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "render", "--data", str(tmp_path),
                              "--split", name, "--variant", variant, *args], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    spec.unlink()  # the split describes itself: its manifest holds the whole spec
    lift = ThreeDIdent(tmp_path, "lift")
    assert lift.factor_names == ("height", "spin", "tint") and lift.latents.shape == (3, 3)
    assert json.loads((tmp_path / "lift" / "manifest.json").read_text())["variant_spec"]["name"] == "lift"
    mine, v2 = ThreeDIdent(tmp_path, "mine"), ThreeDIdent(tmp_path, "v2")
    assert all(np.array_equal(mine.load_array(i), v2.load_array(i)) for i in range(3))
    assert "variant_spec" not in json.loads((tmp_path / "v2" / "manifest.json").read_text())


def test_content_style_pairs_share_content_and_resample_style(tmp_path):
    v = get_variant("causal")
    rows = v.sample_pairs(5000, 2, style=["object_hue", "ground_hue"])
    anchors, positives = rows[0::2], rows[1::2]
    style = [v.names.index("object_hue"), v.names.index("ground_hue")]
    content = [i for i in range(v.n_latents) if i not in style]
    assert np.array_equal(anchors[:, content], positives[:, content])
    assert np.array_equal(anchors, v.sample(5000, 2))
    for i in style:  # drawn afresh from the marginal: unrelated to the anchor's value
        assert abs(np.corrcoef(anchors[:, i], positives[:, i])[0, 1]) < 0.05
        assert stats.ks_2samp(anchors[:, i], positives[:, i]).pvalue > 1e-3
    with pytest.raises(VariantError, match=r"style latents \['hue'\]"):
        v.sample_pairs(5, 0, style=["hue"])
    out = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "render", "--data", str(tmp_path),
                          "--pairs", "--n", "2", "--style", "object_hu"], capture_output=True, text=True)
    assert out.returncode == 1 and "object_hu" in out.stderr and not (tmp_path / "train").exists()

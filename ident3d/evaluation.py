"""The standard evaluator: score an encoder on a split under a versioned protocol.

The evaluator loads the split and the submission, runs the model (a model file in the sandbox) in
``eval()`` mode on float32 images in [0, 1] of shape (B, 3, H, W), standardises the features, and
hands latents and features to the protocol, which splits, fits and scores them
(``ident3d.protocols``: each protocol's summary says what it computes). It then writes the result
document, and with ``fresh`` scores a draw rendered now with the read-outs the protocol fitted.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from tqdm import tqdm

from ident3d import fresh as fresh_module
from ident3d import gap_test
from ident3d.batching import image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.devices import resolve_device
from ident3d.errors import DatasetError, SubmissionError
from ident3d.inference import Runner
from ident3d.ood import confirm_ood_split, ood_split_names, track_ood_splits
from ident3d.protocols import DEFAULT, NAMES, SPLIT_SEED, ClassFactor, Scores, ScoringProtocol, get_protocol
from ident3d.results import RESULT_SCHEMA, Result
from ident3d.sandbox.host import PROBE_IMAGES, SandboxedModel, ScoringProbe
from ident3d.sandbox.limits import SandboxLimits
from ident3d.submissions import (
    Standardisation,
    Submission,
    check_features,
    load_submission,
    module_submission,
)
from ident3d.tracks import Track, get_track, identify, latent_matches

log = logging.getLogger(__name__)


def stage(what: str, progress: bool) -> tqdm:
    """A one-step bar for a long step without a loop of its own (fitting the read-outs, rendering a
    draw): its name when it starts, its time when it ends, on stderr like every bar, so a script sees
    it too (``progress=False`` silences it)."""
    return tqdm(total=1, desc=what, bar_format="{desc}: {elapsed}", disable=not progress, leave=True)


def encode(model: Any, dataset: ThreeDIdent, indices: np.ndarray, device: torch.device,
           batch_size: int, progress: bool, compile: bool = False) -> np.ndarray:
    """Features of the given images, in order. A ``SandboxedModel`` runs in its own process (which
    applies the same eval mode and channels-last); any other model is the caller's own code, run
    here in eval mode (``compile`` is not for official scores: see ``ident3d.inference``)."""
    if isinstance(model, SandboxedModel):
        return _encode_sandboxed(model, dataset, indices, batch_size, progress)
    run = Runner(model, device, batch_size, compile)
    out = []
    with torch.inference_mode(), tqdm(total=len(indices), desc="encode", unit="img", unit_scale=True,
                                      disable=not progress) as bar:  # shows images/s and time left
        for start in range(0, len(indices), batch_size):
            x = image_batch(dataset, indices[start:start + batch_size]).to(device)
            try:
                h = run(x)
            except RuntimeError as error:  # a wrong input size, channel count or device, in torch's words
                reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise SubmissionError(
                    f"the model failed on a batch of shape {tuple(x.shape)} (B, 3, H, W: float32 images in "
                    f"[0, 1], {x.shape[2]} x {x.shape[3]} px as the split holds them): {reason}. Fix: make "
                    "the model accept this shape (e.g. resize inside it, or an adaptive pooling before its "
                    "head).") from error
            if not isinstance(h, torch.Tensor):
                raise SubmissionError(f"the model returned {type(h).__name__}, expected a tensor "
                                      "of shape (B, d).")
            out.append(h.float().cpu().numpy())
            bar.update(len(x))
    return np.concatenate(out) if out else np.zeros((0, 0))


def _encode_sandboxed(model: SandboxedModel, dataset: ThreeDIdent, indices: np.ndarray, batch_size: int,
                      progress: bool) -> np.ndarray:
    """The sandbox computes one batch while this process loads the next; at random points a
    ``ScoringProbe`` encodes a random batch of earlier images again (nothing is in flight then)."""
    chunks = [indices[start:start + batch_size] for start in range(0, len(indices), batch_size)]
    probe = ScoringProbe(len(chunks), batch_size)
    out: list[np.ndarray] = []
    with tqdm(total=len(indices), desc="encode", unit="img", unit_scale=True, disable=not progress) as bar:
        if chunks:
            model.submit(image_batch(dataset, chunks[0]))
        for i in range(len(chunks)):
            following = image_batch(dataset, chunks[i + 1]) if i + 1 < len(chunks) else None
            out.append(model.collect())
            bar.update(len(chunks[i]))
            rows = probe.draw(i, sum(map(len, out))) if probe.due(i) else None
            if rows is not None:
                so_far = np.concatenate(out)
                again = model(image_batch(dataset, indices[:len(so_far)][rows]))
                probe.check(model.path, so_far, rows, again)
            if following is not None:
                model.submit(following)
    return np.concatenate(out) if out else np.zeros((0, 0))


def features(sub: Submission, dataset: ThreeDIdent, device: torch.device, batch_size: int,
              progress: bool) -> np.ndarray:
    n = len(dataset)
    if sub.embeddings is not None:
        return check_features(sub.embeddings, n, str(sub.path))
    if sub.module is not None:
        return check_features(_encode_module(sub.module, dataset, device, batch_size, progress), n,
                              f"{sub.path} outputs")
    sub.model.check_reproducible(image_batch(dataset, np.arange(min(n, PROBE_IMAGES))))
    h = encode(sub.model, dataset, np.arange(n), device, batch_size, progress)
    return check_features(h, n, f"{sub.path} outputs")


def _encode_module(module: torch.nn.Module, dataset: ThreeDIdent, device: torch.device, batch_size: int,
                   progress: bool) -> np.ndarray:
    """Features from a caller's module, which is left as it was given (mode, device, layout)."""
    training = module.training
    where = next((t.device for t in module.parameters()), device)
    try:
        return encode(module, dataset, np.arange(len(dataset)), device, batch_size, progress)
    finally:
        module.to(where, memory_format=torch.contiguous_format).train(training)


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("ident3d", "torch", "numpy", "scipy", "faiss-cpu", "safetensors"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    out["regressor"] = f"ident3d.metrics kernel ridge (scipy {out['scipy']})"
    return out


def evaluate(submission: str | Path | Submission | torch.nn.Module, data_root: str | Path,
             protocol: str = DEFAULT, device: str | None = None, batch_size: int = 256,
             name: str | None = None, arch: str | None = None, split: str = "test",
             progress: bool = True, limits: SandboxLimits | None = None,
             fresh: int | Literal["track"] | None = None, workers: int = 2,
             fresh_seed: int | None = None) -> Result:
    """Score a submission on ``<data_root>/<split>`` and return the result document.

    Model files run in the sandbox under ``limits`` (memory, time per batch, reader caps) after a
    reproducibility probe; the result records which lock-down layers the machine applied. An
    in-memory ``torch.nn.Module`` is the caller's own code: it runs here, in eval mode (its mode,
    device and layout are restored afterwards), and its result is marked self-reported.

    ``fresh`` = N also renders N new test images of the split's track from a seed drawn now
    (``ident3d.fresh``, with ``workers`` render processes), scores the same loaded model on them
    under the same protocol, and adds the draw's scores, seed and memorisation gap to the result;
    ``"track"`` takes the track's ``fresh_images``. ``fresh_seed`` re-renders a draw whose seed was
    revealed (to re-score it); the result then says the seed was given, and no verifier accepts
    such a draw as unseen.

    Args:
        submission: a model file (``.pt2`` export, safetensors with an architecture, ``.npy``
            embeddings of the split) or an in-memory ``torch.nn.Module``.
        data_root: the dataset root holding ``split``.
        protocol: a name in ``ident3d.protocols.REGISTRY`` (default ``DEFAULT``, the held-out halves of
            the whole split; ``ident3d evaluate --help`` lists each).
        device: ``cpu``, ``cuda`` or None (CUDA when present).
        batch_size: images per forward pass.
        name: the model's name in the result (default: the file's stem or the class name).
        arch: the architecture of a safetensors file (``ident3d.architectures`` entry points).
        split: the split to score.
        progress: show progress bars.
        limits: the sandbox's memory, time and reader caps (default: ``SandboxLimits()``).
        fresh: render this many new test images of the split's track and score them too.
        workers: render processes of a fresh draw.
        fresh_seed: re-render a revealed draw.

    Returns:
        The validated result; ``result.save(path)`` writes it, ``result.table()`` prints it.

    Example:
        ```python
        import torch
        import ident3d

        nn = torch.nn
        model = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(16, 10))
        result = ident3d.evaluate(model, "data/preview")   # your own module runs here, self-reported
        print(result.table())
        result.save("module-result.json")
        ```
    """
    return evaluate_protocols(submission, data_root, (protocol,), device, batch_size, name, arch, split,
                              progress, limits, fresh, workers, fresh_seed)[protocol]


def evaluate_protocols(submission: str | Path | Submission | torch.nn.Module, data_root: str | Path,
                       protocols: Sequence[str] = NAMES, device: str | None = None, batch_size: int = 256,
                       name: str | None = None, arch: str | None = None, split: str = "test",
                       progress: bool = True, limits: SandboxLimits | None = None,
                       fresh: int | Literal["track"] | None = None, workers: int = 2,
                       fresh_seed: int | None = None) -> dict[str, Result]:
    """``evaluate`` under several protocols at once: one result per protocol, from one load of the
    model, one encoding of the split and, with ``fresh``, one fresh draw rendered and encoded once
    (every protocol scores the same unseen images). The arguments are ``evaluate``'s."""
    scorings = [get_protocol(p) for p in dict.fromkeys(protocols)]
    if not scorings:
        raise SubmissionError("no protocol to score. Fix: name at least one of " + ", ".join(NAMES))
    start = time.perf_counter()
    dataset = ThreeDIdent(data_root, split)  # cheap checks of the data first, then the model
    if len(dataset) < 4:
        raise DatasetError(f"{dataset.layout.folder}: {len(dataset)} images; scoring needs at least 4 "
                           "(half to fit the read-outs, half to score). Fix: use the whole test split.")
    if fresh is not None and ((fresh != "track" and fresh < 4) or split != "test"):
        raise DatasetError(f"--fresh {fresh} on split {split}: a fresh draw is at least 4 images of a "
                           "track's test distribution. Fix: score the test split with --fresh 4 or more.")
    if fresh_seed is not None and (fresh is None or fresh_seed < 0):
        raise DatasetError(f"--fresh-seed {fresh_seed}: a revealed draw's seed (a number >= 0) re-renders "
                           "a fresh draw. Fix: pass it with --fresh N, as the result being re-scored says.")
    dev = resolve_device(device)
    if isinstance(submission, torch.nn.Module):
        sub = module_submission(submission)
    elif isinstance(submission, Submission):
        sub = submission
    else:
        sub = load_submission(Path(submission), arch, device=str(dev), batch_size=batch_size, limits=limits)
    ahead: fresh_module.BackgroundDraw | None = None
    try:
        where = str(dataset.layout.folder)
        reads_ood = any(s.reads_ood_splits for s in scorings)
        if fresh is not None:  # before encoding: a split whose latents are no track's has no draw
            candidate = fresh_module.check_drawable(
                next(iter(latent_matches(dataset.layout, dataset.latents)), None), where)
            if sub.kind == "embeddings":
                raise SubmissionError(f"{sub.path}: embeddings cannot be scored on a fresh draw (they are "
                                      "features of the public split only). Fix: submit the model, or drop "
                                      "--fresh.")
            # rendered while the public split is encoded and scored; the track is proven below
            ahead = _start_draw(candidate, fresh, fresh_seed, workers,
                                ood_split_names(Path(data_root), candidate) if reads_ood else ())
        # Each image file is read once: the encoding records its bytes' sha256 (and keeps the images
        # it can), and the identity proof and the fingerprint take them from that record.
        dataset.remember_reads()
        h = features(sub, dataset, dev, batch_size, progress)
        track = identify(dataset.layout, dataset.latents, dataset.manifest, seen=dataset.reads)
        drawn = fresh_module.check_drawable(None if track.startswith("custom:") else get_track(track),
                                            where) if fresh is not None else None
        ood_sets = track_ood_splits(Path(data_root), track) if reads_ood else {}
        if ood_sets and sub.kind == "embeddings":
            log.warning("an embeddings file holds features of %s only: the OOD splits (%s) are not scored; "
                        "submit the model to score them", split, ", ".join(ood_sets))
            ood_sets = {}
        h_ood = {}
        for ood_name, split_set in ood_sets.items():
            h_ood[ood_name] = features(sub, split_set, dev, batch_size, progress)
            confirm_ood_split(split_set, track, Path(data_root))
        public = {s.name: score_features(str(sub.path), dataset, h, *(
            (ood_sets, h_ood) if s.reads_ood_splits else ({}, {})), s, progress) for s in scorings}
        draws: dict[str, dict[str, Any]] = {}
        if drawn:
            if ahead is None or (ahead.track, ahead.splits) != (drawn, ("test", *ood_sets)):
                if ahead is not None:  # the proof named another track than the latents did
                    ahead.close()
                ahead = _start_draw(drawn, fresh, fresh_seed, workers, tuple(ood_sets))
            draw = _encode_draw(sub, ahead, fresh_seed is not None, dev, batch_size, progress)
            draws = {protocol: _score_draw(public[protocol], draw, progress) for protocol in public}
    finally:
        if ahead is not None:
            ahead.close()
        sub.close()
    wall = round(time.perf_counter() - start, 3)
    return {protocol: Result(_document(scored, dataset, track, split, sub, name, dev, draws.get(protocol),
                                       wall), "the evaluator's result")
            for protocol, scored in public.items()}


def _document(scored: ScoredSplit, dataset: ThreeDIdent, track: str, split: str, sub: Submission,
              name: str | None, dev: torch.device, draw: dict[str, Any] | None, wall: float
              ) -> dict[str, Any]:
    """One protocol's result document."""
    return {
        "schema": RESULT_SCHEMA,
        "protocol": scored.readout.protocol.name,
        "protocol_version": scored.readout.protocol.version,
        "dataset": {"name": "3dident", "split": split, "variant": dataset.variant,
                    "track": track,
                    "n": len(dataset), "manifest_sha256": dataset.manifest_sha256,
                    "resolution": list(dataset.image_shape[:2])},
        "model": {"name": name or sub.path.stem, "file": sub.path.name, "sha256": sub.sha256,
                  "kind": sub.kind, "arch": sub.arch, "self_reported": sub.self_reported,
                  "feature_dim": scored.feature_dim,
                  **({"sandbox": sub.model.lockdown} if sub.model is not None else {})},
        **scored.fields,
        **({"fresh": draw} if draw else {}),
        "seeds": {"split": SPLIT_SEED, "kernel_subsample": SPLIT_SEED},
        "versions": _versions(),
        "device": "embeddings (not run)" if sub.kind == "embeddings" else str(dev),
        "wall_time_s": wall,
    }


@dataclass(frozen=True)
class ScoredSplit:
    """One split's scores: the result fields they fill, and what a fresh draw is scored with (the
    feature transform and the protocol's read-outs) beside the split's own held-out rows."""

    fields: dict[str, Any]
    standardise: Standardisation
    readout: fresh_module.Readout
    held_out: tuple[np.ndarray, np.ndarray]  # latents and standardised features of Scores.unseen_rows()
    feature_dim: int
    ood: dict[str, tuple[np.ndarray, np.ndarray]]  # OOD split -> its latents and standardised features
    scores: Scores  # the protocol's read-outs, which score a fresh draw too
    latents_fit: np.ndarray  # every latent column (classes included) of the fit rows


def score_features(source: str, dataset: ThreeDIdent, h: np.ndarray, ood_sets: dict[str, ThreeDIdent],
                   h_ood: dict[str, np.ndarray], protocol: ScoringProtocol, progress: bool) -> ScoredSplit:
    """Score a split's raw features ``h`` (and its OOD splits') under ``protocol``; one encoding serves
    every protocol (``source`` names the model in an error)."""
    standardise = Standardisation.fit(h)  # one transform for every split: OOD shifts must survive it
    h = standardise(h, source)
    h_ood = {name: standardise(h_ood[name], f"{source} on {name}") for name in h_ood}
    variant = dataset.variant_spec
    continuous = variant.continuous_columns
    z = dataset.latents[:, continuous].astype(np.float64)
    ood = {name: (split_set.latents[:, continuous].astype(np.float64), h_ood[name])
           for name, split_set in ood_sets.items()}
    names = [dataset.factor_names[c] for c in continuous]
    with stage(protocol.slow_part(len(z)) or f"scoring under {protocol.name}", progress):
        s = protocol.score(z, h, names, ood, paired=dataset.paired)
    fields = {
        **_reported(protocol, s, names, dataset, (dataset.latents[s.fit], h[s.fit]),
                    (dataset.latents[s.test], h[s.test])),
        "matching": [int(a) for a in s.assignment],
        "kernel_ridge": s.kernel,
        "n_fit": len(s.fit),
        "n_score": len(s.test),
    }
    readout = fresh_module.Readout(z[s.fit], h[s.fit], np.asarray(s.assignment), protocol)
    unseen = s.unseen_rows()
    return ScoredSplit(fields, standardise, readout, (z[unseen], h[unseen]), int(h.shape[1]), ood, s,
                        dataset.latents[s.fit])


def _reported(protocol: ScoringProtocol, s: Scores, names: list[str], scored: ThreeDIdent,
              fit: tuple[np.ndarray, np.ndarray], score: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """What a result reports of one scored set, as ``protocol.report`` says, with the split's class
    latents and, on a content/style split, its style latents."""
    classes = [ClassFactor(f.name, f.index, len(f.classes))
               for f in scored.variant_spec.factors if f.is_class]
    style = ((scored.manifest or {}).get("pairs") or {}).get("style") or ()
    return protocol.report(s, names, classes, set(style), fit, score)


@dataclass(frozen=True)
class RenderedDraw:
    """A fresh draw rendered and encoded once, for every protocol to score: per split (the test split,
    then an OOD track's region splits) its latents, its dataset and the model's raw features."""

    seed: int
    given: bool  # the seed was revealed before (a re-score), not drawn now
    n: int
    track: Track
    sets: dict[str, tuple[ThreeDIdent, np.ndarray]]  # split -> (dataset, raw features)
    render_s: float  # the render's wall seconds, most of them beside the public split's encoding and scoring
    encode_s: float
    source: str  # the model, as errors name it


def _start_draw(track: Track, fresh: int | Literal["track"], seed: int | None, workers: int,
                ood: Sequence[str]) -> fresh_module.BackgroundDraw:
    """Begin rendering a fresh draw of ``track`` (seed from OS entropy unless given): its test split
    and each region split in ``ood``, ``fresh`` images each (``"track"``: the track's own number)."""
    n = track.fresh_images if fresh == "track" else fresh
    return fresh_module.BackgroundDraw(track, n, fresh_module.draw_seed() if seed is None else seed,
                                       ("test", *ood), workers)


def _encode_draw(sub: Submission, ahead: fresh_module.BackgroundDraw, given: bool, dev: torch.device,
                 batch_size: int, progress: bool) -> RenderedDraw:
    """Wait for the draw's render to finish, then encode every split of it with the same loaded model."""
    with stage(f"rendering a fresh draw of {ahead.n} images per split of {ahead.track.id} ({ahead.workers} "
               "processes, begun with the public split)", progress):
        root = ahead.wait()
    began = time.perf_counter()
    sets = {}
    for split in ahead.splits:
        dataset = ThreeDIdent(root, split)
        sets[split] = (dataset, features(sub, dataset, dev, batch_size, progress))
    return RenderedDraw(ahead.seed, given, ahead.n, ahead.track, sets, ahead.render_s,
                        time.perf_counter() - began, str(sub.path))


def _score_draw(public: ScoredSplit, draw: RenderedDraw, progress: bool) -> dict[str, Any]:
    """A result's ``fresh`` section under ``public``'s protocol: the draw scored with the read-outs the
    protocol fitted on the public split, its seed (revealed only now, after scoring) and the
    memorisation gaps against the public split's held-out rows and its region splits."""
    began = time.perf_counter()
    drawn: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for split in ("test", *public.ood):
        dataset, raw = draw.sets[split]
        columns = dataset.variant_spec.continuous_columns
        drawn[split] = (dataset.latents[:, columns].astype(np.float64),
                        public.standardise(raw, f"{draw.source} on the fresh draw of {split}"))
    z, h = drawn["test"]
    test = draw.sets["test"][0]
    names = [test.factor_names[c] for c in test.variant_spec.continuous_columns]
    readout, seed, n = public.readout, draw.seed, draw.n
    with stage(f"scoring the fresh draw under {readout.protocol.name}", progress):
        scored = readout.protocol.score_draw(readout.z_fit, readout.h_fit, public.scores, z, h, names,
                                            {split: drawn[split] for split in public.ood},
                                            paired=test.paired)
        reported = _reported(readout.protocol, scored, names, test, (public.latents_fit, readout.h_fit),
                             (test.latents, h))
        gap = fresh_module.memorisation_gap(public.readout, public.held_out, (z, h), seed, paired=test.paired)
        regions = [{"split": split, "n": n, "gap": fresh_module.memorisation_gap(
                        public.readout, public.ood[split], drawn[split], seed)} for split in public.ood]
    return {"seed": seed, "seed_source": "given" if draw.given else "entropy", "n": n,
            "track": draw.track.id,
            "render_settings": draw.track.pixel_settings(),
            "render_s": round(draw.render_s, 3),
            "score_s": round(draw.encode_s + time.perf_counter() - began, 3),
            **reported, "gap": gap, **({"regions": regions} if regions else {}),
            "test": gap_test.described(),
            "memorised": fresh_module.judge([gap, *(r["gap"] for r in regions)])}

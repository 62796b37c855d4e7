#!/usr/bin/env bash
# The verified baselines of the CPU tracks (3dident-v2-64 and its legacy-colour twin), end to end.
#
#   bash baselines/cpu_track.sh [OUT]                  # everything; re-run to resume
#   RUNS="v2-supervised v2-pixels" bash baselines/cpu_track.sh out   # only these runs
#   ADD_ENTRIES=1 bash baselines/cpu_track.sh out      # then re-score and add leaderboard entries
#
# Renders both tracks' splits (`ident3d render --track`, verified against the track), trains every
# baseline at the budget below, scores each encoder with both protocols and writes
# OUT/REPRODUCTION.md (`python -m ident3d.baselines.reproduction OUT`). Every step is skipped when its
# output exists and a killed training run resumes from its last checkpoint, so re-running the
# script after an interruption loses at most `checkpoint_every` steps.
#
# Budgets (one per kind of run, stated in each leaderboard entry), measured on 2 CPU cores:
#   contrastive: 1,200 steps of 128 pairs at lr 1e-3 (about 35 minutes)
#   supervised:  SUPERVISED_STEPS steps of 64 images at lr 1e-3 (about 60 minutes)
#
# Run names are DATA-PRESET[-sSEED]. DATA is v2 or legacy (the two tracks), or v2pairs: exactly
# rendered positive pairs (PAIRED_N pairs at the track's render settings, one positive scale per
# latent: PAIRED_SCALE) for the AnInfoNCE comparison, trained with `positives = "rendered"` and
# scored on the v2 track's test split (linked into the paired data folder). v2-aninfonce trains the
# same preset on snapped pairs of the track's training split: snapped versus exact positives.
# DEVICE=cuda trains on a GPU instead (the budgets stay; the numbers then are not the entries').
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-cpu-track}
DEVICE=${DEVICE:-cpu}
WORKERS=${WORKERS:-2}
IDENT3D=${IDENT3D:-.venv/bin/ident3d}
PYTHON=${PYTHON:-.venv/bin/python}
CONTRASTIVE_STEPS=1200
CONTRASTIVE_BATCH=128
SUPERVISED_STEPS=7200
SUPERVISED_BATCH=64
LR=1e-3
CHECKPOINT_EVERY=200
PAIRED_N=25000
PAIRED_SEED=2
PAIRED_SCALE=0.02,0.5,0.05,0.2,0.1,0.02,0.5,0.05,0.2,0.1  # the aninfonce presets' scales
# name: data preset seed ("pixels" runs have no training)
ALL_RUNS="v2-supervised v2-normal-box-s0 v2-normal-box-s1 v2-normal-box-s2 v2-normal-unbounded
          v2-laplace-box v2-normal-sphere-vmf v2-augm-sphere-vmf v2-pixels legacy-normal-box-s0
          v2pairs-aninfonce v2pairs-aninfonce-isotropic v2-aninfonce"
RUNS=${RUNS:-$ALL_RUNS}

render_track() {  # data-folder track
    for split in test train; do
        $IDENT3D -q render --data "$OUT/data/$1" --track "$2" --split "$split" --workers "$WORKERS"
        [ -f "$OUT/data/$1/$split/images.npy" ] || $IDENT3D -q pack "$OUT/data/$1" --split "$split"
    done
}

render_pairs() {  # the paired training split, at the render settings of 3dident-v2-64
    local data="$OUT/data/v2pairs-64"
    $IDENT3D -q render --data "$data" --split train --pairs --n "$PAIRED_N" --seed "$PAIRED_SEED" \
        --scale "$PAIRED_SCALE" --variant v2 --preset preview --resolution 64 --workers "$WORKERS"
    [ -f "$data/train/images.npy" ] || $IDENT3D -q pack "$data" --split train
    [ -e "$data/test" ] || ln -s "$(cd "$OUT/data/v2-64/test" && pwd)" "$data/test"
}

score() {  # run-folder data-folder
    local run=$1 data=$2
    [ -f "$run/result-cl-ica-2021.json" ] || $IDENT3D -q evaluate --data "$data" \
        --model "$run/encoder.pt2" --protocol cl-ica-2021 --name "$(basename "$run")" \
        --out "$run/result-cl-ica-2021.json"
    [ -f "$run/result.json" ] || $IDENT3D -q evaluate --data "$data" --model "$run/encoder.pt2" \
        --protocol ident3d-eval-v1 --name "$(basename "$run")" --out "$run/result.json"
}

train() {  # run-name
    local name=$1 variant=${1%%-*} rest=${1#*-}
    local seed=0 preset=$rest steps=$CONTRASTIVE_STEPS batch=$CONTRASTIVE_BATCH
    if [[ $rest =~ ^(.*)-s([0-9]+)$ ]]; then preset=${BASH_REMATCH[1]}; seed=${BASH_REMATCH[2]}; fi
    if [ "$preset" = supervised ]; then steps=$SUPERVISED_STEPS; batch=$SUPERVISED_BATCH; fi
    local run="$OUT/runs/$name" data="$OUT/data/$variant-64"
    if [ "$preset" = pixels ]; then
        [ -f "$run/encoder.pt2" ] || $PYTHON -m ident3d.baselines.pixels "$run/encoder.pt2" --size 64
    elif [ ! -f "$run/encoder.pt2" ]; then
        local extra=()
        [ -f "$run/config.json" ] && extra+=(--resume)
        [ "$variant" = v2pairs ] && extra+=(--set positives=rendered)
        $IDENT3D -q train --data "$data" --preset "$preset" --out "$run" --iterations "$steps" \
            --batch-size "$batch" --lr "$LR" --seed "$seed" --device "$DEVICE" \
            --set checkpoint_every=$CHECKPOINT_EVERY "${extra[@]}"
    fi
    score "$run" "$data"
}

render_track v2-64 3dident-v2-64
[[ " $RUNS " =~ " legacy-" ]] && render_track legacy-64 3dident-legacy-64
[[ " $RUNS " =~ " v2pairs-" ]] && render_pairs
for name in $RUNS; do train "$name"; done

$PYTHON -m ident3d.baselines.reproduction "$OUT" > "$OUT/REPRODUCTION.md"
cat "$OUT/REPRODUCTION.md"
if [ "${ADD_ENTRIES:-0}" = 1 ]; then
    $PYTHON -m ident3d.baselines.reproduction "$OUT" --add-entries
    $IDENT3D leaderboard build
fi

#!/usr/bin/env bash
# Small-scale reproduction of Table 4's central claim on CPU (not part of CI).
#
#   bash baselines/reproduce_small.sh [OUT]        # defaults: 20,000 training images, see below
#   N_TRAIN=5000 N_TEST=1000 ITERATIONS=600 BATCH=128 LR=1e-3 bash baselines/reproduce_small.sh repro-pilot
#
# Renders v2 and legacy data at 64 px (preview preset), trains normal-box, normal-unbounded and
# normal-sphere-vmf on v2 and normal-box on legacy for a fixed number of steps, scores every
# encoder with both protocols, and writes OUT/REPRODUCTION.md. Every step resumes when re-run.
# Defaults: 1,200 steps of 128 pairs at lr 1e-3, about 30 minutes per model on 2 CPU cores
# (1.45 s/step); rendering both variants takes about 14 minutes. Pass DEVICE=cuda on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-repro}
N_TRAIN=${N_TRAIN:-20000}
N_TEST=${N_TEST:-5000}
ITERATIONS=${ITERATIONS:-1200}
BATCH=${BATCH:-128}
LR=${LR:-1e-3}
DEVICE=${DEVICE:-cpu}
WORKERS=${WORKERS:-2}
IDENT3D=${IDENT3D:-.venv/bin/ident3d}

for variant in v2 legacy; do
    data="$OUT/data-$variant"
    $IDENT3D render --out "$data" --split train --n "$N_TRAIN" --seed 0 --variant "$variant" --preset preview --workers "$WORKERS"
    $IDENT3D render --out "$data" --split test --n "$N_TEST" --seed 1 --variant "$variant" --preset preview --workers "$WORKERS"
    $IDENT3D pack "$data" --split train
    $IDENT3D pack "$data" --split test
done

train() {  # variant preset
    local run="$OUT/runs/$1-$2"
    $IDENT3D train --data "$OUT/data-$1" --preset "$2" --out "$run" --iterations "$ITERATIONS" \
        --batch-size "$BATCH" --lr "$LR" --device "$DEVICE" --resume
    $IDENT3D evaluate --data "$OUT/data-$1" --model "$run/encoder.pt2" --protocol cl-ica-2021 \
        --name "$1 $2" --out "$run/result-cl-ica-2021.json"
}
for preset in normal-box normal-unbounded normal-sphere-vmf; do train v2 "$preset"; done
train legacy normal-box

.venv/bin/python -m baselines.reproduction "$OUT" > "$OUT/REPRODUCTION.md"
cat "$OUT/REPRODUCTION.md"

#!/usr/bin/env bash
# Trains the pretrained cost model that `tessera tune` starts from when a task has no model of
# its own (cost_model/pretrained/). Two steps:
#   1. corpus: tunes a corpus of tasks into one database on this machine: conv, depthwise,
#      matmul, dense, batch-matmul, pooling and normalization shapes of common networks
#      (tune --op), then every task of the shared models, the bundled model and the exported
#      torchvision models (tune MODEL with a time budget each). A task already in the database
#      is tuned further (new schedules only), so a second run adds to the corpus.
#      The corpus's records are then exported beside the model (corpus.jsonl.xz), so that the
#      model can be retrained after a change of the features without tuning again.
#   2. training: `tessera costmodel train` on every record of the database, the workloads rebuilt
#      from the op specs in the records and from the models' tasks; writes the model blob (with
#      its feature layout version inside) and a JSON sidecar saying what it was trained on.
# Then `tessera costmodel eval --holdout tasks` reports how the model ranks tasks it never saw.
#
# Usage: scripts/train_cost_model.sh [--db PATH] [--out FILE] [--op-trials N] [--scale X]
#                                    [--skip-tune | --saved-corpus] [--no-pretrained-in-tune]
#   --db PATH       the corpus database (default tune_logs/cost_corpus/corpus.db)
#   --out FILE      the model blob (default cost_model/pretrained/cpu_xgboost.tscm; the sidecar is
#                   FILE with .json for .tscm)
#   --op-trials N   candidates measured per op shape (default 48)
#   --scale X       multiplies every model's time budget (default 1: about 16 minutes of tuning
#                   for the models, 8 for the ops on a 2-core machine)
#   --skip-tune     train from the database as it is
#   --saved-corpus  train from the corpus exported beside the model (cost_model/pretrained/
#                   corpus.jsonl.xz), imported into a fresh --db: retrains in a minute, no tuning
#   --no-pretrained-in-tune
#                   tune the corpus without the pretrained model (as the first corpus was made),
#                   so that the new model does not learn from candidates its predecessor chose
# Environment: TESSERA_BUILD_DIR (default build/); TESSERA_NO_BUILD=1 uses the tessera found there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
db="$root/tune_logs/cost_corpus/corpus.db"
out="$root/cost_model/pretrained/cpu_xgboost.tscm"
op_trials=48 scale=1 skip_tune=0 saved_corpus=0 tune_flags=()
need() { [ "$2" -ge 2 ] || { echo "error: $1 needs a value (see --help)" >&2; exit 1; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --db) need "$1" $#; db=$2; shift 2 ;;
    --out) need "$1" $#; out=$2; shift 2 ;;
    --op-trials) need "$1" $#; op_trials=$2; shift 2 ;;
    --scale) need "$1" $#; scale=$2; shift 2 ;;
    --skip-tune) skip_tune=1; shift ;;
    --saved-corpus) skip_tune=1; saved_corpus=1; shift ;;
    --no-pretrained-in-tune) tune_flags=(--pretrained none); shift ;;
    -h|--help) sed -n '2,/^set -euo pipefail$/{/^#/p}' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[[ $op_trials =~ ^[1-9][0-9]*$ ]] ||
  { echo "error: --op-trials wants a positive integer, not '$op_trials'" >&2; exit 1; }
[[ $scale =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] ||
  { echo "error: --scale wants a positive number, not '$scale'" >&2; exit 1; }

# Op shapes of common networks: ResNet (3x3, strided, 1x1, the 7x7 stem), MobileNet depthwise,
# BERT-base projections, feed-forward and attention, pooling, softmax and layer norm.
op_specs=(
  "conv2d:c=64,h=56,w=56,k=64,r=3,pad=1"
  "conv2d:c=128,h=28,w=28,k=128,r=3,pad=1"
  "conv2d:c=256,h=14,w=14,k=256,r=3,pad=1,relu=1"
  "conv2d:c=64,h=56,w=56,k=128,r=3,stride=2,pad=1"
  "conv2d:c=256,h=14,w=14,k=1024,r=1,bias=1"
  "conv2d:c=3,h=224,w=224,k=64,r=7,stride=2,pad=3"
  "conv2d:c=96,h=28,w=28,k=96,r=3,pad=1,groups=4"
  "depthwise_conv2d:c=32,h=112,w=112,r=3,pad=1"
  "depthwise_conv2d:c=144,h=56,w=56,r=3,stride=2,pad=1,relu=1"
  "depthwise_conv2d:c=576,h=14,w=14,r=3,pad=1"
  "matmul:m=128,n=768,k=768"
  "dense:m=64,n=3072,k=768,bias=1,relu=1"
  "batch_matmul:b=12,m=128,n=128,k=64"
  "max_pool2d:c=64,h=112,w=112,kernel=3,stride=2,pad=1"
  "global_avg_pool2d:c=512,h=7,w=7"
  "softmax:m=1536,n=128"
  "layer_norm:m=128,n=768"
)
# Models and their tuning budgets in seconds (times --scale).
shared="$root/../shared/models"
models=(
  "$shared/resnet18/model.onnx=240"
  "$root/models/exported/mobilenet_v2/model.onnx=150"
  "$root/models/exported/squeezenet1_1/model.onnx=120"
  "$shared/bert_emb_op13/model.onnx=120"
  "$root/models/mobilenet_tiny/model.onnx=90"
  "$shared/small_cnn/model.onnx=60"
  "$shared/conv_bn_relu/model.onnx=60"
  "$shared/mlp/model.onnx=60"
)

"$root/scripts/setup.sh" >&2
if [ "${TESSERA_NO_BUILD:-0}" != 1 ]; then
  [ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build "$build" -j "$(nproc)" --target tessera >&2
fi
tessera="$build/tessera"
[ -x "$tessera" ] || { echo "error: no tessera at $tessera" >&2; exit 1; }
mkdir -p "$(dirname "$db")" "$(dirname "$out")"

present=()
for entry in "${models[@]}"; do
  path=${entry%=*}
  if [ -f "$path" ]; then present+=("$entry")
  else echo "note: no model at $path: left out of the corpus" >&2
  fi
done
saved="$(dirname "$out")/corpus.jsonl.xz"
if [ "$saved_corpus" = 1 ]; then
  [ -f "$saved" ] || { echo "error: no saved corpus at $saved" >&2; exit 1; }
  [ ! -e "$db" ] || { echo "error: --saved-corpus imports into a fresh --db, and $db exists" >&2; exit 1; }
  xz -dc "$saved" > "$db.jsonl"
  "$tessera" db import --db "$db" "$db.jsonl" >&2
  rm -f "$db.jsonl"
fi
if [ "$skip_tune" = 0 ]; then
  i=0
  for spec in "${op_specs[@]}"; do
    i=$((i + 1))
    echo "== corpus op $i/${#op_specs[@]}: $spec ($op_trials trials)" >&2
    "$tessera" tune --op "$spec" --trials "$op_trials" --db "$db" "${tune_flags[@]}" >&2
  done
  i=0
  for entry in "${present[@]}"; do
    i=$((i + 1))
    path=${entry%=*}
    budget=$(awk -v b="${entry##*=}" -v s="$scale" 'BEGIN { printf "%d", b * s + 0.5 }')
    echo "== corpus model $i/${#present[@]}: $path (${budget} s)" >&2
    "$tessera" tune "$path" --time-budget "$budget" --db "$db" "${tune_flags[@]}" >&2
  done
  "$tessera" db export --db "$db" -o "$db.jsonl" >&2
  xz -9 -T1 -c "$db.jsonl" > "$saved.tmp" && mv "$saved.tmp" "$saved"
  rm -f "$db.jsonl"
fi

model_args=()
for entry in "${present[@]}"; do model_args+=(--tasks-of "${entry%=*}"); done
"$tessera" costmodel train --db "$db" "${model_args[@]}" --out "$out"
"$tessera" costmodel eval --db "$db" "${model_args[@]}" --holdout tasks --finetune 16

#!/bin/sh
# models.sh PYTHON SOURCE MPIRUN TESTS CLI [MPIRUN FLAGS...]: tensor-parallel models over 2 ranks.
# Writes the tiny test models (tools/make_test_models.py) into a temp folder, runs the MpiModels
# tests under mpirun -np 2, then checks that `radix generate` and `radix bench` under mpirun give
# the ids of one process.
set -eu
python=$1 source=$2 mpirun=$3 tests=$4 cli=$5
shift 5
flags="$*"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$python" "$source/tools/make_test_models.py" "$dir" --size tiny --only gpt2,llama,llama-gguf,gpt2-gguf,qwen2,qwen3,mistral,phi3 \
  --quant q8_0,q4_k_m > "$dir/make.log" 2>&1 || { cat "$dir/make.log"; exit 1; }
RADIX_MPI_MODELS=$dir "$mpirun" $flags -x RADIX_MPI_MODELS -np 2 "$tests" --gtest_filter='*MpiModels*:ShardingDoc.*'
# Greedy, and sampled with a seed (every rank draws the same tokens).
for run in "llama-tiny --temp 0" "gpt2-tiny.gguf --temp 0" "llama-tiny-q8_0.gguf --temp 0" "llama-tiny --seed 7"; do
  set -- $run
  model=$1
  shift
  "$cli" generate --model "$dir/$model" "$@" --ids -p "In the beginning" -n 12 > "$dir/one.txt" 2> "$dir/one.err" ||
    { cat "$dir/one.err"; exit 1; }
  "$mpirun" $flags -np 2 "$cli" generate --model "$dir/$model" "$@" --ids -p "In the beginning" -n 12 > "$dir/two.txt" 2> "$dir/two.err" ||
    { cat "$dir/two.err"; exit 1; }
  if ! cmp -s "$dir/one.txt" "$dir/two.txt"; then
    echo "radix generate --model $model $*: 2 ranks printed other ids than 1" >&2
    echo "1 rank:  $(cat "$dir/one.txt")" >&2
    echo "2 ranks: $(cat "$dir/two.txt")" >&2
    exit 1
  fi
  echo "$model $*: 2 ranks = 1 rank: $(cat "$dir/two.txt")"
done
"$mpirun" $flags -np 2 "$cli" bench --model "$dir/llama-tiny" -p 16 -n 4 -r 1 -t 1 > "$dir/bench.txt"
grep -q "| llama tp2 |" "$dir/bench.txt" || { cat "$dir/bench.txt"; echo "radix bench under mpirun printed no tp2 row" >&2; exit 1; }
[ "$(grep -c "| llama tp2 |" "$dir/bench.txt")" -eq 2 ] || { cat "$dir/bench.txt"; echo "expected one pp and one tg row, from rank 0 only" >&2; exit 1; }
cat "$dir/bench.txt"

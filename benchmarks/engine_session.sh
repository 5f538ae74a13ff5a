#!/usr/bin/env bash
# Every CPU measurement of issue 39, one after the other (never two torch processes at once),
# resumable: a step whose output file exists is skipped. Logs and JSON under runs/bench-engine/.
#   bash benchmarks/engine_session.sh
set -u
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=${PY:-.venv/bin/python}
D=runs/bench-engine
mkdir -p "$D"
step() {  # name, command...
    local name=$1; shift
    if [ -s "$D/$name.done" ]; then echo "== $name: done before"; return; fi
    echo "== $name: $(date +%T)"
    "$@" > "$D/$name.log" 2>&1 && date +%T > "$D/$name.done" || echo "$name failed (see $D/$name.log)"
}
step rl-arith $PY benchmarks/engine_rl.py --config configs/smollm2-arith-grpo.yaml --minutes 10 --engines hf vllm \
    --out $D/rl-arith.json
step speed64 $PY benchmarks/engines.py --prompts 64 --tokens 128 --repeats 2 --engines hf vllm --out $D/speed64.json
step rl-repair $PY benchmarks/engine_rl.py --config configs/smollm2-code-grpo.yaml --minutes 20 --engines vllm \
    --out $D/rl-repair.json
step equal $PY benchmarks/engines.py --equal --n 70 --out $D/equal.json
step speed256 $PY benchmarks/engines.py --prompts 256 --tokens 128 --repeats 1 --engines hf vllm --out $D/speed256.json
echo "== all done $(date +%T)"

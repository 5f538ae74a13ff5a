#!/usr/bin/env bash
# Everything one lent GPU session measures, in one call (the device tool's `run`):
#   benchmarks/gpu.py, benchmarks/pipeline.py on random SmolLM2-135M weights, and two-step
#   `temper train` runs (grpo with a KL reference, ppo with its critic) on cuda.
# The machine is bare and offline: Python packages the image lacks travel as wheels in .whl/
# and SmolLM2's tokenizer in .devcache/ (TEMPERING_HOME). Prepare both here, once:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_17_x86_64 -d .whl transformers==5.24.0 math-verify==0.9.0 \
#       latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2
#   mkdir -p .devcache/models && cp -r ~/.cache/tempering/models/smollm2-tokenizer .devcache/models/
# then: run(command="bash benchmarks/gpu_session.sh", carry=[".whl", ".devcache"]). Logs go to $OUT.
set -u
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD TEMPERING_HOME=$PWD/.devcache
OUT=${OUT:-runs/gpu-session}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name())"
echo 'import sys; print(sys.version.split()[0], sum(range(10)))' > /tmp/probe.py
python3 -m tempering.cli.main sandbox run /tmp/probe.py --json

echo "== benchmarks/gpu.py"
timeout 200 python3 benchmarks/gpu.py --out "$OUT/gpu.json" 2>&1 | tee "$OUT/gpu.log"

echo "== benchmarks/pipeline.py"
timeout 220 python3 benchmarks/pipeline.py --random smollm2-135m --device cuda --dtype bfloat16 \
    --prompts 16 --group 8 --tokens 192 --repeats 3 --out "$OUT/pipeline.json" 2>&1 | tee "$OUT/pipeline.log"

echo "== temper train on cuda (grpo with a KL reference; ppo with its critic)"
for algo in grpo ppo; do
    timeout 60 python3 -m tempering.cli.main train configs/tiny-cpu.yaml --set algorithm.name=$algo \
        --set model.dtype=bfloat16 --run-dir "/tmp/run-$algo" 2>&1 | tail -4
    python3 -c "import json,sys; m=[json.loads(l) for l in open('/tmp/run-$algo/metrics.jsonl')]; print('$algo', len(m), 'steps on', sys.argv[1])" \
        "$(python3 -c 'from tempering.models import resolve_device; print(resolve_device())')"
done

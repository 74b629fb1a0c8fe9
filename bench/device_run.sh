#!/bin/bash
# Runs on a lent accelerator machine, after bench/device_carry.sh's pieces were carried
# there (see that script): unpacks them, then measures the sampling speedup, training
# beside inference and SR-SAC's seeds batched against a loop on the machine's CPUs.
# Results under $OUT (speedup.md, training.md, *.log); with DEVICE_BENCH=training_p10
# only training beside inference for V-trace and R2D2 (p10_<agent>.md).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -z "${DRY:-}" ]; then
  mkdir -p /tmp/stash /tmp/site /tmp/site2
  cp .dev*/part.* /tmp/stash/ 2>/dev/null
  ls -la /tmp/stash
  cat /tmp/stash/part.* | python3 -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/site')" || exit 3
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site2 /tmp/site/*.whl || exit 4
  export PYTHONPATH=/tmp/site2:/tmp/site
  ln -sfn ../learner seed/learner; ln -sfn ../actors seed/actors
fi
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket" ; nvidia-smi -L 2>/dev/null
python3 -c "import tensorflow as tf, grpc, google.protobuf, gymnasium, ale_py, numpy; print('tf', tf.__version__, 'grpc', grpc.__version__, 'protobuf', google.protobuf.__version__, 'numpy', numpy.__version__, 'ale', ale_py.__version__)" || exit 5
python3 -c "import seed.learner.main; print('seed imports')" || exit 6
if [ "${DEVICE_BENCH:-speedup}" = training_p10 ]; then
  # Issue 19's training-beside-inference test: acting frames/s while V-trace and R2D2
  # train, median and p10 of 12 windows of 5 s, against inference only.
  for agent in vtrace r2d2; do
    timeout ${AGENT_S:-240} python3 -m bench.throughput --env atari --agent $agent \
      --actors ${P10_ACTORS:-4,16} --envs 4 --modes inference,training --warmup_s 10 \
      --window_s 5 --windows 12 --out "$OUT/p10_$agent.md" 2>&1 | tee "$OUT/p10_$agent.log" \
      | grep -vE "^(W0000|I0000|WARNING: All log)"
    echo "$agent rc ${PIPESTATUS[0]}"
  done
  exit 0
fi
ACTORS=${ACTORS:-1,2,4,8,16}
timeout ${BENCH_S:-420} python3 -m bench.throughput --env atari --agent vtrace --actors "$ACTORS" --envs 4 \
  --modes env_limit,inference --warmup_s ${WARMUP_S:-5} --window_s ${WINDOW_S:-3} --windows 3 \
  --out "$OUT/speedup.md" 2>&1 | tee "$OUT/bench.log" | grep -vE "^(W0000|I0000|WARNING: All log)"
echo "bench rc ${PIPESTATUS[0]}"
# Training beside inference on the same machine (V-trace), for issue 19's comparison.
timeout ${TRAIN_S:-100} python3 -m bench.throughput --env atari --agent vtrace --actors ${TRAIN_ACTORS:-4,16} --envs 4 \
  --modes training --warmup_s ${WARMUP_S:-5} --window_s ${WINDOW_S:-3} --windows 3 \
  --out "$OUT/training.md" 2>&1 | tee "$OUT/training.log" | grep -vE "^(W0000|I0000|WARNING: All log)"
echo "training bench rc ${PIPESTATUS[0]}"
# SR-SAC's update with N seeds batched against a loop, on these 16 cores (issue 17).
timeout ${SCALING_S:-200} python3 -m bench.seed_scaling 2>&1 | tee "$OUT/seed_scaling.log" | grep -vE "^(W0000|I0000|WARNING: All log)"
echo "seed_scaling rc ${PIPESTATUS[0]}"

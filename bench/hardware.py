"""The CPU a benchmark figure was measured on: its model and the vector extensions that
decide what a train step costs there.

Hosts of one kind differ: on one with native bfloat16 (avx512_bf16) a bf16 torso halved
the train step, on one with only AVX2 + FMA the same step was 27x slower than float32
(shared/BENCHMARKS.md, item 7). So every figure a bench prints says which CPU it came
from, as `describe()` words it.
"""
import os
from typing import Optional, Tuple

from seed.agents.common import native_bfloat16

CPUINFO = '/proc/cpuinfo'
# (flag in /proc/cpuinfo, the name a reader knows it by): the ones a float32 or bfloat16
# matmul's speed turns on.
VECTOR_EXTENSIONS: Tuple[Tuple[str, str], ...] = (
    ('avx2', 'avx2'), ('avx512f', 'avx512f'), ('avx512_bf16', 'avx512_bf16'),
    ('amx_bf16', 'amx'))


def cpu_model(cpuinfo_path: str = CPUINFO) -> str:
  """The first CPU's model name ('model name' on x86), or 'unknown CPU'."""
  try:
    with open(cpuinfo_path, encoding='utf-8', errors='replace') as f:
      for line in f:
        key, _, value = line.partition(':')
        if key.strip() in ('model name', 'Model', 'cpu model') and value.strip():
          return value.strip()
  except OSError:
    pass
  return 'unknown CPU'


def describe(cpuinfo_path: str = CPUINFO, cores: Optional[int] = None) -> str:
  """One line for a benchmark's output, e.g. 'CPU: AMD EPYC, 2 cores; avx2 yes, avx512f
  yes, avx512_bf16 yes, amx no'."""
  cores = os.cpu_count() if cores is None else cores
  flags = native_bfloat16.cpu_flags(cpuinfo_path)
  if flags is None:
    extensions = 'vector extensions unknown (no /proc/cpuinfo flags)'
  else:
    extensions = ', '.join(f'{name} {"yes" if flag in flags else "no"}'
                           for flag, name in VECTOR_EXTENSIONS)
  return f'CPU: {cpu_model(cpuinfo_path)}, {cores} cores; {extensions}'


if __name__ == '__main__':
  print(describe())

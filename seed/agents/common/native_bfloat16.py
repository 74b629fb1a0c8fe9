"""Whether the learner's device multiplies bfloat16 in hardware: what a torso dtype of
'auto' (`unroll_torso_dtype`) decides by.

bfloat16 halves the torso's cost only where the hardware has bfloat16 products: x86
CPUs with AVX512_BF16 or AMX, Arm CPUs with the BF16 extension, NVIDIA GPUs from
compute capability 8.0 (Ampere). Elsewhere TensorFlow converts each product back to
float32: R2D2's train step on an AVX2-only CPU (AMD EPYC, 2 cores) took 2.8x as long in
bfloat16 as in float32 (docs/performance.md, "The torso in bfloat16").
"""
from typing import Iterable, Optional, Sequence, Tuple

from absl import logging

# The CPU flags (x86, /proc/cpuinfo "flags") or features (Arm, "Features") that give
# bfloat16 products.
CPU_BFLOAT16_FLAGS = frozenset({'avx512_bf16', 'amx_bf16', 'bf16'})
# Ampere (8.0) and later multiply bfloat16 on their tensor cores.
GPU_MIN_COMPUTE_CAPABILITY = (8, 0)


def cpu_flags(cpuinfo_path: str = '/proc/cpuinfo') -> Optional[frozenset]:
  """The first CPU's flags (x86) or features (Arm), or None where the file is absent
  (not Linux) or names none."""
  try:
    with open(cpuinfo_path, encoding='utf-8', errors='replace') as f:
      for line in f:
        key, _, value = line.partition(':')
        if key.strip() in ('flags', 'Features'):
          return frozenset(value.split())
  except OSError:
    return None
  return None


def gpu_compute_capabilities() -> Sequence[Tuple[int, int]]:
  """The compute capability of each GPU TensorFlow sees (empty without one)."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  capabilities = []
  for device in tf.config.list_physical_devices('GPU'):
    capability = tf.config.experimental.get_device_details(device).get('compute_capability')
    if capability:
      capabilities.append(tuple(int(x) for x in capability))
  return capabilities


def torso_dtype_for(flags: Optional[Iterable[str]],
                    gpu_capabilities: Sequence[Tuple[int, int]]) -> Tuple[str, str]:
  """(dtype, why) for 'auto': 'bfloat16' where the device that runs the unrolls (the
  first GPU when there is one, else the CPU) has bfloat16 products, else 'float32'."""
  if gpu_capabilities:
    capability = gpu_capabilities[0]
    name = f'GPU of compute capability {capability[0]}.{capability[1]}'
    if tuple(capability) >= GPU_MIN_COMPUTE_CAPABILITY:
      return 'bfloat16', f'{name} (bfloat16 from 8.0)'
    return 'float32', f'{name} (bfloat16 from 8.0)'
  if flags is None:
    return 'float32', 'CPU flags unknown (no /proc/cpuinfo)'
  found = sorted(CPU_BFLOAT16_FLAGS.intersection(flags))
  if found:
    return 'bfloat16', f'CPU with {", ".join(found)}'
  return 'float32', f'CPU without {", ".join(sorted(CPU_BFLOAT16_FLAGS))}'


# What bfloat16 cost where it was emulated, measured on AVX2-only AMD EPYCs (2 cores):
# docs/performance.md, "The torso in bfloat16".
EMULATED_COST = ("R2D2's train step took 2.8x as long as in float32, and V-trace at "
                 "2 actors x 16 envs trained at 40 frames/s against 1,091")


def emulated_bfloat16_warning(why: str) -> str:
  """The warning for a torso asked to run in bfloat16 on a device that emulates it
  (`why` as torso_dtype_for words the device)."""
  return (f"unroll_torso_dtype 'bfloat16' on a {why}: bfloat16 is emulated there and "
          f"its gradients cost several times float32's ({EMULATED_COST}); "
          "'auto' or 'float32' trains faster here. Going on in bfloat16 as asked.")


def resolve_torso_dtype(dtype: str) -> str:
  """'auto' -> 'bfloat16' or 'float32' for this machine (logged with the reason); any
  other dtype is returned as it is, 'bfloat16' with a warning where it is emulated."""
  if dtype not in ('auto', 'bfloat16'):
    return dtype
  resolved, why = torso_dtype_for(cpu_flags(), gpu_compute_capabilities())
  if dtype == 'auto':
    logging.info("unroll_torso_dtype 'auto' -> %r: %s", resolved, why)
    return resolved
  if resolved != 'bfloat16':
    logging.warning('%s', emulated_bfloat16_warning(why))
  return dtype

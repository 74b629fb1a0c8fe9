"""Sampling throughput of PrioritizedReplay with Atari-sized R2D2 sequences.

  python -m bench.replay_sampling
  python -m bench.replay_sampling --capacity 500 --repeats 3

Fills a replay with `--capacity` distinct sequences of `--steps` steps, each step an
Atari observation uint8 [4, 84, 84] plus reward, flags, action, Q values and an LSTM
state (about 2.3 MB a sequence at 80 steps: 2,000 of them take ~4.5 GB), then times
train-step-shaped loops of `--batches` batches of `--batch_size`:
  refs   sample(batch_size) + update_priorities: the replay's own cost, items by
         reference;
  stack  the same plus stacking the batch into [B, steps, ...] arrays (fifo.stack_unrolls),
         the copy a learner needs before it can feed the model.
Each is repeated `--repeats` times; the median repeat is reported as sequences/s and
batches/s. Priorities are random, so the sum tree is exercised at full depth.
"""
import argparse
import statistics
import time

import numpy as np

from seed.replay.fifo import stack_unrolls
from seed.replay.prioritized import PrioritizedReplay

_OBSERVATION_SHAPE = (4, 84, 84)
_NUM_ACTIONS = 18
_LSTM_UNITS = 512


def _templates(rng, steps: int, count: int):
  """A few random sequences; the replay stores copies, so every item owns its memory."""
  return [{
      'observation': rng.integers(0, 256, (steps,) + _OBSERVATION_SHAPE, dtype=np.uint8),
      'reward': rng.normal(size=steps).astype(np.float32),
      'terminated': np.zeros(steps, bool),
      'truncated': np.zeros(steps, bool),
      'action': rng.integers(0, _NUM_ACTIONS, steps).astype(np.int32),
      'q_values': rng.normal(size=(steps, _NUM_ACTIONS)).astype(np.float32),
      'core_state': (rng.normal(size=_LSTM_UNITS).astype(np.float32),
                     rng.normal(size=_LSTM_UNITS).astype(np.float32)),
  } for _ in range(count)]


def _copy(item):
  return {name: tuple(np.copy(x) for x in value) if isinstance(value, tuple) else np.copy(value)
          for name, value in item.items()}


def _nbytes(item) -> int:
  return sum(sum(x.nbytes for x in v) if isinstance(v, tuple) else v.nbytes
             for v in item.values())


def _time_loop(replay, rng, batch_size: int, batches: int, stack: bool) -> float:
  """Seconds for `batches` sample (+ stack) + update_priorities steps."""
  start_s = time.perf_counter()
  for _ in range(batches):
    ids, items, _ = replay.sample(batch_size)
    if stack:
      stack_unrolls(items)
    replay.update_priorities(ids, rng.exponential(size=batch_size))
  return time.perf_counter() - start_s


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--capacity', type=int, default=2000, help='sequences in the replay')
  parser.add_argument('--steps', type=int, default=80, help='steps per sequence')
  parser.add_argument('--batch_size', type=int, default=64, help='sequences per batch')
  parser.add_argument('--batches', type=int, default=20, help='batches per repeat')
  parser.add_argument('--repeats', type=int, default=5, help='repeats; the median is shown')
  args = parser.parse_args(argv)

  rng = np.random.default_rng(0)
  templates = _templates(rng, args.steps, count=8)
  replay = PrioritizedReplay(args.capacity, seed=0)
  fill_start_s = time.perf_counter()
  for i in range(args.capacity):
    replay.insert(_copy(templates[i % len(templates)]), priority=float(rng.exponential()))
  fill_s = time.perf_counter() - fill_start_s
  item_mb = _nbytes(templates[0]) / 2**20
  print(f'replay: {args.capacity} sequences x {args.steps} steps, {item_mb:.2f} MiB each, '
        f'{item_mb * args.capacity / 1024:.2f} GiB; filled in {fill_s:.1f} s '
        f'({args.capacity / fill_s:.0f} inserts/s incl. copies)')
  print(f'batch: {args.batch_size} sequences ({item_mb * args.batch_size:.0f} MiB stacked), '
        f'median of {args.repeats} repeats x {args.batches} batches')
  print(f'{"mode":<6} {"sequences/s":>12} {"batches/s":>10} {"ms/batch":>9}')
  for mode in ('refs', 'stack'):
    _time_loop(replay, rng, args.batch_size, 2, mode == 'stack')  # Warm-up.
    seconds = [_time_loop(replay, rng, args.batch_size, args.batches, mode == 'stack')
               for _ in range(args.repeats)]
    batches_per_s = args.batches / statistics.median(seconds)
    print(f'{mode:<6} {batches_per_s * args.batch_size:>12,.0f} {batches_per_s:>10,.1f} '
          f'{1000 / batches_per_s:>9.2f}')


if __name__ == '__main__':
  main()

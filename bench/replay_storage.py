"""Replay storage before (the dict-item replay of 84551c4) and after (this tree), in one run.

  python -m bench.replay_storage
  python -m bench.replay_storage --sequences 200 --sac_transitions 100000   # quicker

Atari R2D2: plays real Pong (`atari:Pong` through seed.envs, the learner's frame
stacking, random actions, `--envs` envs in turn) into sequences as the learner
builds them: 121 steps (burn-in 40 + 80 + 1), consecutive sequences of an env
overlapping by 41 steps, with an LSTM state (c, h) of 512 float32 each (random).
"before" items are today's dicts (observation stacks, reward, flags, action, Q
values [121, 6], core state (c, h, epsilon)); "after" items are Unrolls (no
policy outputs, core state (c, h)), stored with the default storage (single
frames, zstd) and with single frames uncompressed. For `--sequences` sequences:
memory held (the arrays' bytes, and the growth of the process's anonymous RSS,
after malloc_trim, while filling), checkpoint file size, save and load time, inserts/s, and sampling
throughput: batches of 64 with priority updates, "before" including the stacking
of its items into batch arrays (fifo.stack_unrolls), which the learner needed.

SAC: `--sac_transitions` HalfCheetah transitions (n = 1: observation [2, 17],
action [2, 6], reward, terminated, truncated [2]), memory, save/load and
sampling throughput in batches of 256.

Each measurement runs in a fresh subprocess, one at a time, so that RSS growth
is its own. The old code is read from git (`git show <commit>:seed/replay/...`)
into a temporary package `seed_before`, removed at the end. Figures are medians
of `--repeats`; the machine's load average is printed, as other work on it
disturbs the timings.
"""
import argparse
import ctypes
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from seed.process.local_processes import REPO, child_env

from bench import hardware

BEFORE_COMMIT = '84551c4'
_OLD_FILES = ('__init__.py', 'fifo.py', 'prioritized.py', 'sum_tree.py')
_STEPS, _KEPT_STEPS, _STACK, _LSTM_UNITS = 121, 41, 4, 512
_ATARI_BATCH, _SAC_BATCH = 64, 256
_PHASES = {'atari': ('before', 'after', 'after_raw'), 'sac': ('before', 'after')}


def _rss_anon_bytes() -> int:
  """Anonymous resident memory, after handing glibc's free heap memory back (malloc_trim)."""
  gc.collect()
  try:
    ctypes.CDLL('libc.so.6').malloc_trim(0)
  except (OSError, AttributeError):
    pass
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith('RssAnon:'):
        return int(line.split()[1]) * 1024
  return 0


def _extract_old_code(commit: str, directory: str) -> None:
  """seed/replay at `commit` as the package `seed_before.replay` under `directory`."""
  package = os.path.join(directory, 'seed_before', 'replay')
  os.makedirs(package)
  open(os.path.join(directory, 'seed_before', '__init__.py'), 'w').close()
  for name in _OLD_FILES:
    source = subprocess.run(['git', 'show', f'{commit}:seed/replay/{name}'], cwd=REPO,
                            capture_output=True, text=True)
    if source.returncode:
      raise SystemExit(f'cannot read seed/replay/{name} at {commit} from git (a shallow '
                       f'clone?): {source.stderr.strip()}')
    with open(os.path.join(package, name), 'w') as f:
      f.write(source.stdout.replace('from seed.replay.', 'from seed_before.replay.'))


def _play_pong(num_sequences: int, num_envs: int, directory: str) -> None:
  """Plays Pong into `num_sequences` sequences, saved compactly under `directory`.

  Observations are kept as each sequence's pool of single frames (checked to
  rebuild the env's stacks exactly), so the phases can build fresh stacks.
  """
  from seed.envs import registry  # pylint: disable=g-import-not-at-top
  from seed.replay import frames  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  envs = [registry.make_env('atari:Pong', seed=e) for e in range(num_envs)]
  observations = [env.reset()[0] for env in envs]
  after_step = [(0.0, False, False)] * num_envs  # reward, terminated, truncated
  windows = [[] for _ in envs]
  columns = {name: [] for name in ('full', 'reward', 'terminated', 'truncated', 'action',
                                   'env_id')}
  offsets = [0]
  with open(os.path.join(directory, 'frames.bin'), 'wb') as pools:
    while len(offsets) <= num_sequences:
      for e, env in enumerate(envs):
        action = int(rng.integers(env.action_space.n))
        windows[e].append((observations[e],) + after_step[e] + (action,))
        if len(windows[e]) == _STEPS and len(offsets) <= num_sequences:
          stacks, reward, terminated, truncated, action_t = map(np.array, zip(*windows[e]))
          pool, full = frames.split_stacks(stacks)
          rebuilt = frames.join_stacks(pool, frames.stack_indices(full, _STACK))
          assert np.array_equal(rebuilt, stacks)
          pools.write(pool.tobytes())
          offsets.append(offsets[-1] + pool.shape[0])
          for name, value in (('full', full), ('reward', reward.astype(np.float32)),
                              ('terminated', terminated), ('truncated', truncated),
                              ('action', action_t.astype(np.int32)), ('env_id', e)):
            columns[name].append(value)
          windows[e] = windows[e][-_KEPT_STEPS:]
        observation, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
          observation, _ = env.reset()
        observations[e], after_step[e] = observation, (reward, terminated, truncated)
  for env in envs:
    env.close()
  np.save(os.path.join(directory, 'offsets.npy'), np.array(offsets, np.int64))
  for name, values in columns.items():
    np.save(os.path.join(directory, f'{name}.npy'), np.array(values))


class _Pong:
  """The played sequences, each rebuilt fresh, as the unroll builder hands them over."""

  def __init__(self, directory: str):
    from seed.replay import frames  # pylint: disable=g-import-not-at-top
    self._frames = frames
    self._pools = np.memmap(os.path.join(directory, 'frames.bin'), np.uint8, 'r')
    self._c = {name: np.load(os.path.join(directory, f'{name}.npy'))
               for name in ('offsets', 'full', 'reward', 'terminated', 'truncated', 'action',
                            'env_id')}

  def __len__(self):
    return len(self._c['env_id'])

  def fields(self, i):
    c = self._c
    pool = self._pools[c['offsets'][i] * 84 * 84:c['offsets'][i + 1] * 84 * 84]
    rng = np.random.default_rng(i)
    indices = self._frames.stack_indices(c['full'][i], _STACK)
    return dict(observation=self._frames.join_stacks(pool.reshape(-1, 84, 84), indices),
                reward=c['reward'][i].copy(), terminated=c['terminated'][i].copy(),
                truncated=c['truncated'][i].copy(), action=c['action'][i].copy(),
                lstm=tuple(rng.normal(size=_LSTM_UNITS).astype(np.float32) for _ in range(2)),
                env_id=np.int64(c['env_id'][i]))


def _atari_items(data: _Pong, version: str):
  from seed import types  # pylint: disable=g-import-not-at-top
  for i in range(len(data)):
    f = data.fields(i)
    if version == 'before':
      yield {'observation': f['observation'], 'reward': f['reward'],
             'terminated': f['terminated'], 'truncated': f['truncated'], 'action': f['action'],
             'q': np.random.default_rng(i).normal(size=(_STEPS, 6)).astype(np.float32),
             'core_state': f['lstm'] + (np.float32(0.4),)}
    else:
      yield types.Unroll(types.Steps(f['observation'], f['reward'], f['terminated'],
                                     f['truncated'], f['action'], {}), f['lstm'], f['env_id'])


def _sac_items(count: int, version: str, chunk: int = 10_000):
  from seed import types  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  for start in range(0, count, chunk):
    n = min(chunk, count - start)
    observation = rng.normal(size=(n, 2, 17)).astype(np.float32)
    action = rng.uniform(-1, 1, (n, 2, 6)).astype(np.float32)
    reward = rng.normal(size=(n, 2)).astype(np.float32)
    terminated = rng.random((n, 2)) < 0.001
    truncated = np.zeros((n, 2), bool)
    for j in range(n):
      if version == 'before':  # Each item owned fresh arrays, as the old unroll builder made.
        yield {'observation': observation[j].copy(), 'reward': reward[j].copy(),
               'terminated': terminated[j].copy(), 'truncated': truncated[j].copy(),
               'action': action[j].copy(), 'core_state': (np.float32(0.0),)}
      else:
        yield types.Unroll(types.Steps(observation[j], reward[j], terminated[j], truncated[j],
                                       action[j], {}), (), np.int64(j % 16))


def _old_nbytes(replay) -> int:
  """The arrays an old replay holds: item leaves, priorities, ids, trees."""
  def leaves(x):
    if isinstance(x, dict):
      return sum(leaves(v) for v in x.values())
    if isinstance(x, (tuple, list)):
      return sum(leaves(v) for v in x)
    return np.asarray(x).nbytes
  # pylint: disable=protected-access
  items = sum(leaves(item) for item in replay._items if item is not None)
  tree = replay._tree
  return (items + replay._priorities.nbytes + replay._ids.nbytes + tree._sum.nbytes +
          tree._max.nbytes)


def _sampling_rate(replay, version: str, batch: int, batches: int, repeats: int) -> float:
  """Median unrolls/s of sample (+ stacking, before) + update_priorities."""
  rng = np.random.default_rng(1)
  if version == 'before':
    from seed_before.replay.fifo import stack_unrolls  # pylint: disable=g-import-not-at-top
  def loop(count):
    start_s = time.perf_counter()
    for _ in range(count):
      if version == 'before':
        ids, items, _ = replay.sample(batch)
        stack_unrolls(items)
      else:
        ids = replay.sample(batch).ids
      replay.update_priorities(ids, rng.exponential(size=batch))
    return time.perf_counter() - start_s
  loop(2)  # Warm-up.
  return batches * batch / statistics.median(loop(batches) for _ in range(repeats))


def _phase(kind: str, version: str, args) -> dict:
  """Fills a replay, measures it, saves, frees it, loads the file back; returns figures."""
  if version == 'before':
    # pylint: disable-next=g-import-not-at-top
    from seed_before.replay.prioritized import PrioritizedReplay
    make = lambda: PrioritizedReplay(capacity)
  else:
    from seed.replay.prioritized import PrioritizedReplay  # pylint: disable=g-import-not-at-top
    compression = None if version == 'after_raw' else 'zstd'
    make = lambda: PrioritizedReplay(capacity, observation_compression=compression)
  if kind == 'atari':
    data = _Pong(args.workdir)
    capacity, items, batch = len(data), _atari_items(data, version), _ATARI_BATCH
  else:
    capacity, batch = args.sac_transitions, _SAC_BATCH
    items = _sac_items(capacity, version)
  gc.collect()
  rss_start = _rss_anon_bytes()
  replay = make()
  start_s = time.perf_counter()
  for item in items:
    replay.insert(item)
  insert_s = time.perf_counter() - start_s
  del item
  gc.collect()
  result = {'rss_growth': _rss_anon_bytes() - rss_start,
            'nbytes': _old_nbytes(replay) if version == 'before' else replay.nbytes,
            'inserts_per_s': capacity / insert_s,
            'sampled_per_s': _sampling_rate(replay, version, batch, args.batches, args.repeats)}
  path = os.path.join(args.workdir, f'{kind}_{version}.replay.npz')
  start_s = time.perf_counter()
  replay.save(path)
  result['save_s'] = time.perf_counter() - start_s
  result['file_bytes'] = os.path.getsize(path)
  del replay
  gc.collect()
  loaded = make()
  start_s = time.perf_counter()
  loaded.load(path)
  result['load_s'] = time.perf_counter() - start_s
  os.remove(path)
  return result


def _run_phase(kind: str, version: str, args, python_path: str) -> dict:
  env = child_env()
  env['PYTHONPATH'] = python_path + os.pathsep + env['PYTHONPATH']
  command = [sys.executable, '-m', 'bench.replay_storage', f'--phase={kind}:{version}',
             f'--workdir={args.workdir}', f'--sac_transitions={args.sac_transitions}',
             f'--batches={args.batches}', f'--repeats={args.repeats}']
  done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
  if done.returncode:
    raise SystemExit(f'{kind}:{version} failed:\n{done.stdout}\n{done.stderr}')
  return json.loads(done.stdout.strip().splitlines()[-1])


_MEASURES = (  # label, key, format; rates are better higher, the rest lower.
    ('memory held, MB (arrays)', 'nbytes', lambda x: f'{x / 1e6:,.1f}'),
    ('memory: RSS growth, MB', 'rss_growth', lambda x: f'{x / 1e6:,.1f}'),
    ('checkpoint file, MB', 'file_bytes', lambda x: f'{x / 1e6:,.1f}'),
    ('save, s', 'save_s', '{:.2f}'.format), ('load, s', 'load_s', '{:.2f}'.format),
    ('inserts/s', 'inserts_per_s', '{:,.0f}'.format),
    ('sampled {unit}/s (batches of {batch})', 'sampled_per_s', '{:,.0f}'.format))


def _table(results: dict, args, num_sequences: int) -> str:
  """Markdown: a row per measure, 'gain' > 1 where after is better (smaller, or faster)."""
  lines = [f'| {num_sequences:,} Atari sequences, {args.sac_transitions:,} SAC transitions '
           f'| before ({args.before_commit}) | after | gain | after, frames uncompressed |',
           '|---|---:|---:|---:|---:|']
  for title, kind, unit, batch in (('Atari R2D2', 'atari', 'sequences', _ATARI_BATCH),
                                   ('SAC', 'sac', 'transitions', _SAC_BATCH)):
    for label, key, fmt in _MEASURES:
      before, after = results[kind]['before'][key], results[kind]['after'][key]
      gain = after / before if key.endswith('_per_s') else before / max(after, 1e-9)
      raw = results[kind].get('after_raw', {}).get(key)
      lines.append(f'| {title}: {label.format(unit=unit, batch=batch)} | {fmt(before)} | '
                   f'{fmt(after)} | {gain:,.2f}x | {"—" if raw is None else fmt(raw)} |')
  return '\n'.join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sequences', type=int, default=1000, help='Atari sequences (capacity)')
  parser.add_argument('--envs', type=int, default=4, help='Pong envs played in turn')
  parser.add_argument('--sac_transitions', type=int, default=1_000_000)
  parser.add_argument('--batches', type=int, default=10, help='batches per timed repeat')
  parser.add_argument('--repeats', type=int, default=5, help='repeats; the median is shown')
  parser.add_argument('--before_commit', default=BEFORE_COMMIT)
  parser.add_argument('--phase', help=argparse.SUPPRESS)  # kind:version, in a subprocess.
  parser.add_argument('--workdir', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.phase:
    print(json.dumps(_phase(*args.phase.split(':'), args)))
    return
  workdir = tempfile.mkdtemp(prefix='replay_storage.')
  try:
    args.workdir = workdir
    _extract_old_code(args.before_commit, workdir)
    print(hardware.describe())
    print(f'load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cpus)', flush=True)
    start_s = time.perf_counter()
    _play_pong(args.sequences, args.envs, workdir)
    print(f'played Pong into {args.sequences} sequences in {time.perf_counter() - start_s:.0f} s',
          flush=True)
    results = {}
    for kind, versions in _PHASES.items():
      for version in versions:
        results.setdefault(kind, {})[version] = _run_phase(kind, version, args, workdir)
        print(f'{kind}:{version}: {results[kind][version]}', flush=True)
    print(f'load average at end: {os.getloadavg()[0]:.2f}')
    print(_table(results, args, args.sequences))
  finally:
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
  main()

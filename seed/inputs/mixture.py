"""A replay mixture as an agent input: every batch takes a fixed share from each replay.

Every unroll goes into every replay of the mixture (seed.inputs.mixture_spec says
which kinds there are). The queue, when there is one, sets the pace: it blocks the
inference thread while full, as UnrollFifo does alone, and gets unrolls only once
every other replay holds its share of a batch, so the first batch never waits on a
queue that the actors cannot fill. Without a queue a sample-to-insert limiter keeps
`samples_per_insert`.

A batch lists the queue's share first, then each replay's, in the mixture's order.
Its ids are `replay index << ID_SHIFT | that replay's id`, so priorities go back to
the replay that gave the unroll (the queue's are ignored). Importance weights are the
prioritized replay's; 1 elsewhere.

Behaviour and target policies stay apart: a replayed unroll keeps the policy outputs
it was acted with (V-trace's behaviour logits), so the importance weights of its
train step compare the current policy with the one that acted.
"""
import collections
import glob
import logging
import os
import threading
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from seed import types
from seed.inputs import mixture_spec
from seed.inputs.mixture_spec import ReplaySpec, batch_shares
from seed.inputs.rate_limiter import SampleToInsertRatio
from seed.replay import elite
from seed.replay import npz
from seed.replay.fifo import UnrollFifo
from seed.replay.prioritized import PrioritizedReplay

_log = logging.getLogger(__name__)

ID_SHIFT = 56  # Leaves 2^56 ids per replay and room for 127 replays in an int64.

# The current network's feature vectors [B, T + 1, F] for a batch of stored unrolls.
FeatureFunction = Callable[[types.Unroll], np.ndarray]


class _Ring:
  """uniform and prioritized: a PrioritizedReplay (exponent 0 samples uniformly)."""

  def __init__(self, spec: ReplaySpec, seed: int):
    uniform = spec.kind != 'prioritized'
    self.spec = spec
    self.replay = PrioritizedReplay(
        spec.capacity, 0.0 if uniform else spec.priority_exponent,
        0.0 if uniform else spec.importance_exponent, seed=seed)

  def put(self, unroll: types.Unroll) -> None:
    self.replay.insert(unroll)

  def __len__(self) -> int:
    return len(self.replay)

  def sample(self, share: int) -> types.Sample:
    return self.replay.sample(share)

  def update_priorities(self, ids, priorities) -> None:
    if self.spec.kind == 'prioritized':
      self.replay.update_priorities(ids, priorities)

  def stats(self, prefix: str) -> Dict[str, float]:
    return {f'{prefix}/size': float(len(self.replay))}

  def save(self, path: str) -> None:
    self.replay.save(path)

  def load(self, path: str) -> None:
    self.replay.load(path)


class _RankedRing(_Ring):
  """elite and attentive: a uniform ring whose candidates are ranked before sampling.

  Each sample draws candidate_count(share, lambda) unrolls uniformly (with
  replacement), computes the current network's feature vectors for them and keeps
  `share` of them by seed.replay.elite's strategy: elite ranks by the distance
  between the new and the stored feature vectors (the unrolls the policy has moved
  least from), attentive by the distance to the last states of the latest unrolls
  (what the actors see now). lambda anneals per sample (train step) down to 1, where
  sampling is plain uniform and nothing is ranked.
  """

  def __init__(self, spec: ReplaySpec, seed: int, features: FeatureFunction,
               feature_output: str):
    super().__init__(spec, seed)
    self._features = features
    self._feature_output = feature_output
    self._lock = threading.Lock()
    # Times each stored unroll was picked (by slot, keyed by its insertion id).
    self._times_sampled = np.zeros(spec.capacity, np.int64)
    self._counted_ids = np.full(spec.capacity, -1, np.int64)
    self.samples_drawn = 0
    self._latest = collections.deque(maxlen=spec.reference_unrolls)

  def put(self, unroll: types.Unroll) -> None:
    super().put(unroll)
    if self.spec.kind == 'attentive':
      with self._lock:
        self._latest.append(unroll)

  def lambda_now(self) -> float:
    spec = self.spec
    return elite.lambda_at(self.samples_drawn, spec.lambda_batch_multiplier,
                           spec.alfa_annealing_factor, spec.lambda_annealing_steps)

  def _counts(self, ids: np.ndarray) -> np.ndarray:
    slots = ids % self.spec.capacity
    return np.where(self._counted_ids[slots] == ids, self._times_sampled[slots], 0)

  def sample(self, share: int) -> types.Sample:
    count = elite.candidate_count(share, self.lambda_now())
    candidates = self.replay.sample(count)
    if count > share:
      current = np.asarray(self._features(candidates.data), np.float64)
      if self.spec.kind == 'elite':
        stored = candidates.data.steps.policy_outputs[self._feature_output]
        distances = elite.unroll_distances(current, stored, self.spec.distance, self.spec.p)
      else:
        with self._lock:
          latest = list(self._latest)
        if latest:
          references = np.asarray(self._features(types.stack_unrolls(latest)))[:, -1]
          distances = elite.attentive_distances(current, references, self.spec.distance,
                                                self.spec.p)
        else:  # Restored from a checkpoint, no unroll since: nothing to attend to yet.
          distances = np.zeros(count)
      with self._lock:
        times = self._counts(candidates.ids)
      keep = elite.select(distances, times, share, self.spec.strategy)
      candidates = types.Sample(ids=candidates.ids[keep],
                                data=types.take_unrolls(candidates.data, keep),
                                weights=candidates.weights[keep])
    with self._lock:
      slots = candidates.ids % self.spec.capacity
      fresh = self._counted_ids[slots] != candidates.ids
      self._times_sampled[slots[fresh]] = 0
      self._counted_ids[slots] = candidates.ids
      np.add.at(self._times_sampled, slots, 1)
      self.samples_drawn += 1
    return candidates

  def stats(self, prefix: str) -> Dict[str, float]:
    return dict(super().stats(prefix), **{f'{prefix}/lambda': self.lambda_now()})

  def save(self, path: str) -> None:
    super().save(path)
    with self._lock:
      entries = [('times_sampled', self._times_sampled.copy()),
                 ('counted_ids', self._counted_ids.copy()),
                 ('samples_drawn', np.array(self.samples_drawn, np.int64))]
    npz.write_atomically(_ranking_path(path), entries)

  def load(self, path: str) -> None:
    super().load(path)
    ranking = _ranking_path(path)
    if not os.path.exists(ranking):
      _log.warning('no sampling counts saved beside %s: counting again from 0', path)
      return
    with np.load(ranking, allow_pickle=False) as data:
      times, ids = data['times_sampled'], data['counted_ids']
      if times.shape != (self.spec.capacity,) or ids.shape != (self.spec.capacity,):
        raise ValueError(f'{ranking}: sampling counts for capacity {times.shape[0]}, this '
                         f'replay has {self.spec.capacity}; they must match')
      with self._lock:
        self._times_sampled = times.astype(np.int64)
        self._counted_ids = ids.astype(np.int64)
        self.samples_drawn = int(data['samples_drawn'])


def _ranking_path(replay_path: str) -> str:
  return replay_path[:-len('.npz')] + '.ranking.npz'


class ReplayMixture:
  """The agent input of V-trace and PPO: see the module docstring."""

  def __init__(self, specs: Sequence[ReplaySpec], batch_unrolls: int,
               stop_event: Optional[threading.Event] = None, *, seed: int = 0,
               samples_per_insert: float = 1.0, min_fill_unrolls: int = 0,
               features: Optional[FeatureFunction] = None,
               feature_output: Optional[str] = None, agent_name: str = 'the agent',
               accepted_kinds: Sequence[str] = mixture_spec.KINDS):
    """features, feature_output: the agent's current feature vectors of stored unrolls,
    and the policy output holding them as acted; elite and attentive replays need both.
    accepted_kinds: the kinds the agent can train from (Agent.mixture_kinds).

    Raises:
      ValueError: shares that do not fit (mixture_spec.batch_shares), a kind the agent
        does not accept, or an elite or attentive replay without feature vectors.
    """
    for index, spec in enumerate(specs):
      if spec.kind not in accepted_kinds:
        raise ValueError(f'replay {index} ({spec.kind}): {agent_name} cannot train from it '
                         f'(it needs priorities, importance weights or feature vectors '
                         f'the agent does not give); accepted for {agent_name}: '
                         f'{", ".join(accepted_kinds)}')
    self.specs = tuple(specs)
    self.batch_unrolls = int(batch_unrolls)
    self.shares = batch_shares(self.specs, self.batch_unrolls)
    self._stop = stop_event or threading.Event()
    self.queue: Optional[UnrollFifo] = None
    self._replays: List[Tuple[int, _Ring]] = []  # (index in specs, replay)
    for index, (spec, share) in enumerate(zip(self.specs, self.shares)):
      if spec.kind == 'queue':
        self.queue = UnrollFifo(spec.capacity * share, stop_event=self._stop)
      elif spec.kind in ('elite', 'attentive'):
        if features is None or feature_output is None:
          raise ValueError(f'replay {index} ({spec.kind}) ranks unrolls by the feature '
                           f'vectors of the network that acted, and {agent_name} keeps '
                           "none; accepted: kinds 'queue', 'uniform', 'prioritized' for it, "
                           'or an agent with feature vectors (vtrace)')
        self._replays.append((index, _RankedRing(spec, seed + index, features,
                                                 feature_output)))
      else:
        self._replays.append((index, _Ring(spec, seed + index)))
    self._queue_index = next((i for i, s in enumerate(self.specs) if s.kind == 'queue'), None)
    self._min_fill = [max(int(min_fill_unrolls), self.shares[i],
                          ring.spec.reference_unrolls if ring.spec.kind == 'attentive' else 1)
                      for i, ring in self._replays]
    self.samples_per_insert = float(samples_per_insert)
    self.limiter: Optional[SampleToInsertRatio] = None
    if self.queue is None:
      # Nothing else holds the actors back: keep the replay ratio, as ReplayInput does.
      min_size = max(self._min_fill)
      self.limiter = SampleToInsertRatio(
          self.samples_per_insert, min_size,
          error_buffer=max(2.0 * self.batch_unrolls, 2.0 * self.samples_per_insert),
          stop_event=self._stop)

  @property
  def replays_warm(self) -> bool:
    """Every replay holds what its first share needs."""
    return all(len(ring) >= fill for (_, ring), fill in zip(self._replays, self._min_fill))

  def put(self, unroll: types.Unroll) -> bool:
    """Into every replay, then the queue (blocking while full); False once stopping."""
    if self.limiter is not None:
      while not self.limiter.await_insert(timeout_s=0.5):
        if self._stop.is_set():
          return False
    for _, ring in self._replays:
      ring.put(unroll)
    if self.queue is not None and self.replays_warm:
      return self.queue.put(unroll)
    return not self._stop.is_set()

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    """A batch of every replay's share, or None if one is not there within the timeout."""
    if batch_unrolls != self.batch_unrolls:
      raise ValueError(f'batch of {batch_unrolls} unrolls asked from a mixture whose shares '
                       f'{self.shares} were set for {self.batch_unrolls}')
    parts: Dict[int, types.Sample] = {}
    if self.limiter is not None:
      if not self.limiter.await_sample(timeout_s=timeout_s, num_samples=batch_unrolls):
        return None
    elif not self.replays_warm:
      self._stop.wait(min(timeout_s, 0.05))
      return None
    if self.queue is not None:
      part = self.queue.sample(self.shares[self._queue_index], timeout_s=timeout_s)
      if part is None:
        return None
      parts[self._queue_index] = part
    for index, ring in self._replays:
      parts[index] = ring.sample(self.shares[index])
    order = sorted(parts, key=lambda i: (self.specs[i].kind != 'queue', i))
    return types.Sample(
        ids=np.concatenate([(np.int64(i) << ID_SHIFT) | parts[i].ids for i in order]),
        data=types.concat_unrolls([parts[i].data for i in order]),
        weights=np.concatenate([parts[i].weights for i in order]).astype(np.float32))

  def ready(self, batch_unrolls: int) -> bool:
    """The ratio allows a batch (no queue), or every replay is warm and the queue holds
    its share."""
    if self.limiter is not None:
      return self.limiter.can_sample(batch_unrolls)
    return self.replays_warm and (
        self.queue is None or len(self.queue) >= self.shares[self._queue_index])

  def update_priorities(self, ids, priorities) -> None:
    """New priorities for a batch's ids go to the replays that gave them."""
    ids = np.asarray(ids, np.int64)
    priorities = np.asarray(priorities, np.float64)
    replay_of = ids >> ID_SHIFT
    local = ids & ((np.int64(1) << ID_SHIFT) - 1)
    for index, ring in self._replays:
      mine = replay_of == index
      if mine.any():
        ring.update_priorities(local[mine], priorities[mine])

  def stats(self) -> Dict[str, float]:
    """Per replay: 'replay/<index>_<kind>/size' (and /lambda for elite and attentive)."""
    logs: Dict[str, float] = {}
    for index, ring in self._replays:
      logs.update(ring.stats(f'replay/{index}_{ring.spec.kind}'))
    return logs

  @property
  def fill(self) -> float:
    """The queue's fill, or the replays' when there is no queue."""
    if self.queue is not None:
      return self.queue.fill
    return min(len(ring) / ring.spec.capacity for _, ring in self._replays)

  @property
  def saves_anything(self) -> bool:
    """Whether a checkpoint has replay contents to keep (the queue's are never saved)."""
    return bool(self._replays)

  def save(self, checkpoint_path: str) -> None:
    """Writes each replay (not the queue) next to a checkpoint: <ckpt>.replay-<i>.npz."""
    for index, ring in self._replays:
      ring.save(f'{checkpoint_path}.replay-{index}.npz')

  def restore(self, checkpoint_path: str) -> bool:
    """Reads back what `save` wrote; a missing file leaves that replay empty."""
    restored = False
    for index, ring in self._replays:
      path = f'{checkpoint_path}.replay-{index}.npz'
      if not os.path.exists(path):
        _log.warning('no replay %d saved with %s: it starts empty', index, checkpoint_path)
        continue
      ring.load(path)
      restored = True
    if self.limiter is not None and restored:
      # Resume where a running limiter settles (see ReplayInput.restore).
      inserts = min(len(ring) for _, ring in self._replays)
      lag = self.samples_per_insert * self.limiter.min_size_to_sample
      self.limiter.load_state_dict({
          'inserts': inserts, 'samples': max(0, int(inserts * self.samples_per_insert - lag))})
    return restored

  @staticmethod
  def prune(directory: str, keep_checkpoints) -> None:
    """Deletes replay files whose checkpoint the manager no longer keeps."""
    keep = {os.path.basename(path) for path in keep_checkpoints}
    for path in glob.glob(os.path.join(directory, 'ckpt-*.replay-*.npz')):
      if os.path.basename(path).split('.replay-')[0] not in keep:
        os.remove(path)

"""TensorBoard scalars, the episodes CSV and the console progress line.

Scalar names are stable (dashboards and tests rely on them) and every scalar
is stepped by env frames (progress.csv has one line per tick, for plots and benchmarks):
  episode/return, episode/length, eval/episode_return, eval/episode_length
  throughput/env_frames_per_s, throughput/learner_steps_per_s
  loss/<name>, policy/entropy, policy/mean_rho, policy/mean_value, train/grad_norm,
  train/learning_rate (from the agent's train step logs)
  inference/mean_batch_size, inference/padding_fraction, inference/ms_per_batch
  input/queue_fill
  learner/actor_streams, learner/connected_envs (envs whose state the learner holds)
  process/rss_mb, process/threads, process/open_fds (the learner process)
  train/nonfinite_steps, checkpoint/failures (totals of this run)
"""
import collections
import logging
import os
import threading
import time
from typing import Dict, Optional

import numpy as np
import psutil
import tensorflow as tf

from seed.run_dir import records
from seed.run_dir.layout import RunDir

from . import run_files
from .counters import Counters

_log = logging.getLogger('seed.progress')

# After a failed write, a new TensorBoard events file is tried this much later:
# every try on a full disk leaves a small file behind.
RETRY_S = 60.0

# Train-step log keys that are not losses get their own namespace.
_TRAIN_LOG_NAMESPACES = {'entropy': 'policy/entropy', 'mean_rho': 'policy/mean_rho',
                         'mean_value': 'policy/mean_value', 'grad_norm': 'train/grad_norm',
                         'learning_rate': 'train/learning_rate', 'resets': 'train/resets'}


class Metrics:
  """Collects from the inference and trainer threads; `tick()` writes them out."""

  def __init__(self, logdir: str, counters: Counters, return_window: int = 20,
               summary_dir: Optional[str] = None, num_seeds: int = 1,
               log_train_steps: bool = False):
    """With `num_seeds` > 1 (an agent training several seeds), episodes.csv has a `seed`
    column and TensorBoard each seed's returns under seed_<k>/ too, at that seed's frames
    (the learner's frames / num_seeds: see _write_summaries). With
    `log_train_steps`, train_steps.csv gets a line per train step: the learner step and
    the train step's logs (losses, statistics), in full float precision."""
    os.makedirs(logdir, exist_ok=True)
    self._num_seeds = num_seeds
    self._counters = counters
    self._summary_dir = summary_dir or logdir
    self._writer = tf.summary.create_file_writer(self._summary_dir)
    self._summaries = run_files.Outage('the TensorBoard summaries')
    self._writer_retry_at = 0.0  # monotonic time to open a new events file after a failure
    run_dir = RunDir(logdir)
    self._episodes_csv = run_files.AppendOnlyCsv(
        run_dir.episodes_csv,
        records.EPISODE_COLUMNS + ((records.SEED_COLUMN,) if num_seeds > 1 else ()))
    self._progress_csv = run_files.AppendOnlyCsv(run_dir.progress_csv,
                                                 records.PROGRESS_COLUMNS)
    self._train_steps_path = run_dir.train_steps_csv if log_train_steps else None
    # Its columns: the first logs, or the file's header when a resumed run appends.
    self._train_steps_csv: Optional[run_files.AppendOnlyCsv] = None
    self._lock = threading.Lock()
    self._recent_returns = collections.deque(maxlen=return_window)
    self._new_episodes = []
    self._new_eval_episodes = []
    self._batch_envs = self._batch_padded = self._batch_count = 0
    self._batch_seconds = 0.0
    self._lane_batches: Dict[int, int] = collections.Counter()  # lane -> batches this tick
    self._train_sums: Dict[str, float] = collections.defaultdict(float)
    self._train_count = 0
    self._last_tick = (time.monotonic(), counters.snapshot())
    self._start_time = time.time()

  def restart_rates(self) -> None:
    """Measures rates from now on (after a restore moved the counters)."""
    self._last_tick = (time.monotonic(), self._counters.snapshot())

  def on_episode(self, episode_return: float, episode_steps: int,
                 evaluation: bool = False, seed_index: int = 0) -> None:
    frames = self._counters.get('env_frames')
    episode = (frames, episode_return, episode_steps, seed_index)
    if evaluation:  # Logged apart; not in the training return window or the counters.
      with self._lock:
        self._new_eval_episodes.append(episode)
      return
    self._counters.add(episodes=1)
    with self._lock:
      self._recent_returns.append(episode_return)
      self._new_episodes.append(episode)
      seed_column = f',{seed_index}' if self._num_seeds > 1 else ''
      self._episodes_csv.write_line(f'{frames},{episode_return:.6g},{episode_steps},'
                                    f'{time.time() - self._start_time:.2f}{seed_column}')

  def on_batch(self, stats) -> None:
    with self._lock:
      self._batch_envs += stats.num_envs
      self._batch_padded += stats.padded_size
      self._batch_seconds += stats.inference_s
      self._batch_count += 1
      self._lane_batches[stats.lane] += 1

  def on_train(self, logs: Dict[str, float]) -> None:
    with self._lock:
      for name, value in logs.items():
        self._train_sums[name] += float(value)
      self._train_count += 1
      if self._train_steps_path:
        if self._train_steps_csv is None:
          self._train_steps_csv = run_files.AppendOnlyCsv(
              self._train_steps_path, ('learner_steps',) + tuple(sorted(logs)))
        columns = self._train_steps_csv.columns[1:]
        self._train_steps_csv.write_line(','.join(
            [str(self._counters.snapshot()['learner_steps'])] +
            [repr(float(logs.get(name, float('nan')))) for name in columns]))

  def mean_recent_return(self) -> Optional[float]:
    """Mean return of the last `return_window` episodes, once that many have ended."""
    with self._lock:
      if len(self._recent_returns) < self._recent_returns.maxlen:
        return None
      return sum(self._recent_returns) / len(self._recent_returns)

  def tick(self, queue_fill: float, actor_streams: int = 0,
           connected_envs: int = 0) -> Dict[str, float]:
    """Writes the scalars gathered since the last tick and logs the progress line."""
    process = process_gauges()
    now, counts = time.monotonic(), self._counters.snapshot()
    last_time, last_counts = self._last_tick
    self._last_tick = (now, counts)
    elapsed = max(now - last_time, 1e-9)
    with self._lock:
      episodes, self._new_episodes = self._new_episodes, []
      eval_episodes, self._new_eval_episodes = self._new_eval_episodes, []
      scalars = {
          'throughput/env_frames_per_s':
              (counts['env_frames'] - last_counts['env_frames']) / elapsed,
          'throughput/learner_steps_per_s':
              (counts['learner_steps'] - last_counts['learner_steps']) / elapsed,
          'input/queue_fill': queue_fill,
          'learner/actor_streams': actor_streams,
          'learner/connected_envs': connected_envs,
          **process,
      }
      if self._batch_count:
        scalars['inference/mean_batch_size'] = self._batch_envs / self._batch_count
        scalars['inference/padding_fraction'] = 1 - self._batch_envs / self._batch_padded
        scalars['inference/ms_per_batch'] = 1000 * self._batch_seconds / self._batch_count
      if set(self._lane_batches) != {0}:  # Several inference devices: the share of each.
        for lane, batches in sorted(self._lane_batches.items()):
          scalars[f'inference/lane_{lane}_batches'] = batches
      for name, total in self._train_sums.items():
        default = name if '/' in name else f'loss/{name}'  # e.g. replay/size as it is
        scalars[_TRAIN_LOG_NAMESPACES.get(name, default)] = total / self._train_count
      self._batch_envs = self._batch_padded = self._batch_count = 0
      self._batch_seconds = 0.0
      self._lane_batches.clear()
      self._train_sums.clear()
      self._train_count = 0
      recent = list(self._recent_returns)
    self._write_summaries(counts['env_frames'], episodes, eval_episodes, scalars)
    self._progress_csv.write_line(
        f'{time.time() - self._start_time:.3f},{counts["env_frames"]},{counts["learner_steps"]},'
        f'{counts["episodes"]},{scalars["throughput/env_frames_per_s"]:.1f},'
        f'{scalars.get("inference/mean_batch_size", 0.0):.2f},{queue_fill:.3f},'
        f'{actor_streams},{connected_envs},{process["process/rss_mb"]:.1f},'
        f'{process["process/threads"]},{process["process/open_fds"]}')
    mean_return = f'{sum(recent) / len(recent):.1f}' if recent else 'n/a'
    _log.info('frames %s | %s frames/s | learner %d steps (%.1f/s) | episodes %d | '
              'return %s (last %d) | batch %.1f | queue %.0f%% | envs %d | rss %.0f MB',
              f'{counts["env_frames"]:,}', f'{scalars["throughput/env_frames_per_s"]:,.0f}',
              counts['learner_steps'], scalars['throughput/learner_steps_per_s'],
              counts['episodes'], mean_return, len(recent),
              scalars.get('inference/mean_batch_size', 0.0), 100 * queue_fill,
              connected_envs, process['process/rss_mb'])
    return scalars

  def _write_summaries(self, env_frames: int, episodes, eval_episodes,
                       scalars: Dict[str, float]) -> None:
    """This tick's TensorBoard summaries; dropped (and logged once) when they cannot be
    written. A writer that failed is closed: its events file may end in a torn
    record, which TensorBoard reads up to. A new file is opened RETRY_S later."""
    if self._writer is None and time.monotonic() < self._writer_retry_at:
      self._summaries.skipped()
      return
    # NumPy scalars only: TensorFlow (2.21) keeps every distinct Python int or
    # float it turns into a tensor, ~750 bytes each, for the life of the process
    # (the soak in docs/reliability.md grew 3.8 MB a minute from these).
    try:
      if self._writer is None:
        self._writer = tf.summary.create_file_writer(self._summary_dir)
      with self._writer.as_default(step=np.int64(env_frames)):
        for prefix, return_tag, length_tag, logged in (
            ('', 'episode/return', 'episode/length', episodes),
            ('', 'eval/episode_return', 'eval/episode_length', eval_episodes)):
          for frames, episode_return, episode_steps, seed_index in logged:
            # Several seeds: every seed's curve of its own, beside the mixed one, at
            # that seed's own frames. Env k acts for seed k mod num_seeds, so with a
            # number of envs that is a multiple of num_seeds (the dmc15 suite: one env
            # per seed) the seeds step equally often and each has played frames / N.
            tags = [(prefix, frames)] + ([(f'seed_{seed_index}/', frames // self._num_seeds)]
                                         if self._num_seeds > 1 else [])
            for tag_prefix, step in tags:
              tf.summary.scalar(tag_prefix + return_tag, np.float32(episode_return),
                                step=np.int64(step))
              tf.summary.scalar(tag_prefix + length_tag, np.float32(episode_steps),
                                step=np.int64(step))
        for name, value in scalars.items():
          tf.summary.scalar(name, np.float32(value))
      self._writer.flush()
    except (tf.errors.OpError, OSError) as e:
      self._summaries.failed(e)
      self._close_writer()
      self._writer_retry_at = time.monotonic() + RETRY_S
      return
    self._summaries.succeeded()

  def _close_writer(self) -> None:
    writer, self._writer = self._writer, None
    if writer is not None:
      try:
        writer.close()
      except (tf.errors.OpError, OSError):
        pass  # What it still held is lost with the outage.

  def sync_files(self) -> None:
    """Makes the CSV files' lines durable (each checkpoint does: what a resumed run
    starts from and what the files show agree, also on Cloud Storage FUSE)."""
    for csv_file in (self._episodes_csv, self._progress_csv, self._train_steps_csv):
      if csv_file is not None:
        csv_file.sync()

  def close(self) -> None:
    self._close_writer()
    self._episodes_csv.close()
    self._progress_csv.close()
    if self._train_steps_csv is not None:
      self._train_steps_csv.close()


def process_gauges() -> Dict[str, float]:
  """This process's resident memory (MB), threads and open file descriptors."""
  process = psutil.Process()
  with process.oneshot():
    return {'process/rss_mb': process.memory_info().rss / 2**20,
            'process/threads': process.num_threads(), 'process/open_fds': process.num_fds()}

"""Summaries do not grow the learner's memory with every episode they log."""
import psutil
import pytest

from seed.learner.counters import Counters
from seed.learner.metrics import Metrics

pytestmark = pytest.mark.timeout(120)


def test_logging_many_episodes_keeps_memory_flat(tmp_path):
  # TensorFlow keeps every distinct Python scalar it converts (~750 bytes each):
  # 12,000 episodes at distinct frame counts grew RSS by ~17 MB (58 MB for 40,000).
  counters = Counters()
  metrics = Metrics(str(tmp_path), counters)
  process = psutil.Process()

  def log(episodes):
    for i in range(episodes):
      counters.add(env_frames=9)
      metrics.on_episode(0.25 * (i % 4), 9)
      if i % 100 == 0:
        metrics.on_train({'loss': 0.001 * i})
        metrics.tick(0.5, actor_streams=1, connected_envs=8)

  log(2_000)  # Warm up TensorFlow's summary ops and the allocator.
  before_mb = process.memory_info().rss / 2**20
  log(12_000)
  grown_mb = process.memory_info().rss / 2**20 - before_mb
  metrics.close()
  assert grown_mb < 5, f'RSS grew {grown_mb:.1f} MB over 12,000 logged episodes'

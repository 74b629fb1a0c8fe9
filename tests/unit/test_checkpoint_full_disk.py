"""A checkpoint that cannot be written for lack of space: a clear error, the previous one
intact and restorable, no partial files left, and the next save works once there is room."""
import contextlib
import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.system.faults import full_disk
from tests.system.faults.outcome import Unavailable
from seed.inputs.replay_input import ReplayInput
from seed.learner.checkpoint import Checkpointer, CheckpointWriteError
from seed.learner.counters import Counters
from tests.unit.test_replay import sequence

pytestmark = pytest.mark.timeout(120)


@contextlib.contextmanager
def small_tmpfs(size_mb: int):
  """A tmpfs of `size_mb` (a disk that fills up), unmounted also when the test fails."""
  with tempfile.TemporaryDirectory(prefix='seed-tmpfs-') as directory:
    try:
      with full_disk.tmpfs(directory, size_mb):
        yield directory
    except Unavailable as e:
      pytest.skip(str(e))


def make_state(seed: int):
  """Model variables (~1 MB), an Adam optimizer with slots, counters and a replay."""
  rng = np.random.default_rng(seed)
  variables = [tf.Variable(rng.normal(size=(256, 256)).astype(np.float32)) for _ in range(4)]
  optimizer = keras.optimizers.Adam(1e-3)
  optimizer.build(variables)
  optimizer.apply_gradients(zip([tf.ones_like(v) for v in variables], variables))
  counters = Counters()
  counters.add(env_frames=1000 * (seed + 1), learner_steps=seed + 1)
  # Below min_fill_unrolls, inserts need no samples between them.
  replay = ReplayInput(2, capacity_unrolls=64, min_fill_unrolls=64)
  for i in range(40):
    replay.put(sequence(rng, i))
  items = {'variables': variables, 'optimizer': optimizer}
  return items, counters, replay


# With a replay, its file (written first) is what fails; without, TensorFlow's own.
@pytest.mark.parametrize('with_replay', [True, False], ids=['replay', 'model_only'])
def test_a_full_disk_fails_the_save_and_keeps_the_previous_checkpoint(with_replay):
  with small_tmpfs(size_mb=8) as disk:
    directory = os.path.join(disk, 'ckpt')
    items, counters, replay = make_state(seed=0)
    replay = replay if with_replay else None
    checkpointer = Checkpointer(directory, items, counters, replay=replay)
    first = checkpointer.save()
    first_files = sorted(os.listdir(directory))
    filler = full_disk.fill_disk(disk)
    counters.add(learner_steps=5)
    with pytest.raises(CheckpointWriteError) as info:
      checkpointer.save()
    message = str(info.value)
    assert f'could not write checkpoint 2 into {directory}' in message
    assert 'No space left on device' in message or 'space' in message.lower(), message
    assert f'the previous checkpoint {first} is intact' in message
    assert checkpointer.latest == first
    assert sorted(os.listdir(directory)) == first_files  # Nothing of the failed save left.

    # Another process (a restart) resumes from the intact one, replay included.
    restored_items, restored_counters, restored_replay = make_state(seed=1)
    restored_replay = restored_replay if with_replay else None
    assert Checkpointer(directory, restored_items, restored_counters,
                        replay=restored_replay).restore_latest()
    assert restored_counters.get('learner_steps') == 1
    for saved, restored in zip(items['variables'], restored_items['variables']):
      np.testing.assert_array_equal(saved.numpy(), restored.numpy())
    if with_replay:
      assert restored_replay.fill == replay.fill

    os.unlink(filler)  # Room again: the next periodic save works.
    second = checkpointer.save()
    assert second.endswith('ckpt-2') and checkpointer.latest == second

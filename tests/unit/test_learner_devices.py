"""--inference_devices: which devices serve inference, and the errors for the wrong ones.

(The strategy over --learner_devices needs TensorFlow's devices split before it starts:
tests/system/test_data_parallel.py, in child processes.)"""
import pytest

from seed.learner import devices


def test_inference_runs_where_tensorflow_places_it_unless_told():
  assert devices.inference_devices('', '') == [None]
  assert devices.inference_devices('GPU:0,GPU:1', '') == [None]


def test_inference_devices_are_named_among_the_learner_devices():
  assert devices.inference_devices('GPU:0,GPU:1,GPU:2', 'GPU:1,GPU:0') == [
      '/device:GPU:1', '/device:GPU:0']


@pytest.mark.parametrize('learner, inference, message', [
    ('', 'GPU:0', '--inference_devices=GPU:0 names devices among --learner_devices, which '
                  'is empty: set --learner_devices too'),
    ('GPU:0,GPU:1', 'GPU:2', '--inference_devices=GPU:2: /device:GPU:2 is not among '
                             '--learner_devices=GPU:0,GPU:1'),
    ('GPU:0,GPU:1', 'GPU:1,GPU:1', '--inference_devices=GPU:1,GPU:1 names a device twice'),
])
def test_wrong_inference_devices_are_refused_naming_them(learner, inference, message):
  with pytest.raises(ValueError) as refused:
    devices.inference_devices(learner, inference)
  assert message in str(refused.value)

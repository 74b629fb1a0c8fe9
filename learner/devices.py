"""The learner's devices: the strategy its agent is built under (--learner_devices) and
the devices that serve inference (--inference_devices).

Empty (the default): TensorFlow's default strategy, one device, the learner as it always
ran. Several: a MirroredStrategy over them; the agent's variables are mirrored, its train
step runs data-parallel (seed.agents.common.learning). TensorFlow's own all-reduce,
no other.

Inference runs on the first learner device unless --inference_devices names others
among them: each then has a batch of its own in flight (seed.inference.batcher's lanes).
Wherever it runs, a policy call reads the variables' first copy, which every update
writes, so its weights are always the latest step's; on an inference device that is not
the first that read is a device-to-device copy of the weights per call (the Nature
CNN's 1.7M parameters are 7 MB: about 25 us over NVLink, 0.5 ms over PCIe 4 x16), so
the first device is the cheapest to infer on.
"""
from typing import List, Optional

import tensorflow as tf

from seed import settings


def names(text: str) -> List[str]:
  """'GPU:0,GPU:1' -> ['/device:GPU:0', '/device:GPU:1'] (the format is checked by the
  setting, seed.settings)."""
  return [f'/device:{name}' for name in settings.device_names(text)]


def split_cpu(text: str) -> None:
  """Splits the CPU into as many logical devices as `text` names (CPU:0,CPU:1 -> 2).

  Call before TensorFlow runs anything: its devices are fixed at its first op."""
  cpu_indices = [int(name.rsplit(':', 1)[1]) for name in names(text) if ':CPU:' in name]
  wanted = max(cpu_indices, default=0) + 1
  physical = tf.config.list_physical_devices('CPU')
  if wanted > len(physical):
    tf.config.set_logical_device_configuration(
        physical[0], [tf.config.LogicalDeviceConfiguration() for _ in range(wanted)])


def strategy(text: str, agent_name: str, refusal: str) -> tf.distribute.Strategy:
  """The strategy to build the agent under.

  Raises:
    ValueError: a device that is not there (naming those that are), or several devices
      for an agent that cannot train on them (`refusal` says why).
  """
  wanted = names(text)
  if not wanted:
    return tf.distribute.get_strategy()
  available = [device.name for device in tf.config.list_logical_devices()]
  missing = [name for name in wanted if name not in available]
  if missing:
    raise ValueError(f'--learner_devices={text}: no {", ".join(missing)} here; this '
                     f'machine has {", ".join(available)}')
  _refuse_repeats('--learner_devices', text, wanted)
  if len(wanted) == 1:
    return tf.distribute.OneDeviceStrategy(wanted[0])
  if refusal:
    raise ValueError(f'--learner_devices={text}: agent {agent_name!r} cannot train on '
                     f'several devices: {refusal}. Give it one device.')
  return tf.distribute.MirroredStrategy(wanted)


def inference_devices(learner_text: str, inference_text: str) -> List[Optional[str]]:
  """The devices inference runs on, one lane each: [None] (wherever TensorFlow places
  it, the first learner device) unless --inference_devices names some.

  Raises:
    ValueError: inference devices without learner devices, or ones not among them, or
      one named twice.
  """
  wanted = names(inference_text)
  if not wanted:
    return [None]
  learner = names(learner_text)
  if not learner:
    raise ValueError(f'--inference_devices={inference_text} names devices among '
                     '--learner_devices, which is empty: set --learner_devices too '
                     '(e.g. --learner_devices=GPU:0,GPU:1)')
  outside = [name for name in wanted if name not in learner]
  if outside:
    raise ValueError(f'--inference_devices={inference_text}: {", ".join(outside)} is not '
                     f'among --learner_devices={learner_text}')
  _refuse_repeats('--inference_devices', inference_text, wanted)
  return wanted


def _refuse_repeats(flag: str, text: str, wanted: List[str]) -> None:
  if len(set(wanted)) != len(wanted):
    raise ValueError(f'{flag}={text} names a device twice')

"""A run's checkpoints: their layout (the learner's counters beside the agent's items),
the prefix a path names, and reading one into this process's objects, or refusing it.

The learner writes them (seed.learner.checkpoint); `--init_checkpoint`, test mode and
the diagnostics read a checkpoint that some other configuration may have written.
TensorFlow's own errors for one that does not fit (another env, agent, torso or layer
size) name internal object paths, or say nothing until a variable is used; so the
variables of both sides are compared first, and a mismatch is one line naming the
checkpoint and the first difference.
"""
import os
import re
import tempfile
from typing import Any, Dict, List, Mapping, NamedTuple

import numpy as np
import tensorflow as tf

from seed import config
from seed.run_dir.layout import RunDir


class SavedCounters(NamedTuple):
  """The learner's counters, as a checkpoint keeps them (one int64 vector, this order)."""
  env_frames: int  # with action repeat
  env_steps: int
  episodes: int
  learner_steps: int


def counters_variable(values=None) -> tf.Variable:
  """The checkpoint's counters vector (zeros, or `values` in SavedCounters' order)."""
  initial = np.zeros(len(SavedCounters._fields), np.int64) if values is None else values
  return tf.Variable(initial, dtype=tf.int64, trainable=False)


def learner_checkpoint(counters: tf.Variable, items: Mapping[str, Any]) -> tf.train.Checkpoint:
  """What the learner saves: its counters beside the agent's items (model, optimizer, ...)."""
  return tf.train.Checkpoint(counters=counters, **items)


# Keys TensorFlow adds beside the variables, which say nothing about the network.
_BOOKKEEPING = ('_CHECKPOINTABLE_OBJECT_GRAPH', 'save_counter/')
_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'
_ENV_NAME = re.compile(r"^EnvConfig\.name\s*=\s*(.+)$", re.MULTILINE)


class CheckpointMismatchError(ValueError):
  """The checkpoint's variables do not fit this configuration's network."""


def resolve(path: str, flag: str = '--init_checkpoint') -> str:
  """The checkpoint prefix `path` names: itself (RUN/ckpt/ckpt-7), or the latest one
  of a run directory or checkpoint directory. Raises ValueError naming `flag`."""
  accepted = 'a checkpoint prefix like RUN/ckpt/ckpt-7, or a run directory (its latest)'
  if os.path.isdir(path):
    in_run = RunDir(path).checkpoints
    directory = in_run if os.path.isdir(in_run) else path
    prefix = tf.train.latest_checkpoint(directory)
    if prefix is None:
      raise ValueError(f'{flag}={path}: no checkpoint in {directory}; expected {accepted}')
    return prefix
  if os.path.exists(f'{path}.index'):
    return path
  raise ValueError(f'{flag}={path}: no such checkpoint ({path}.index does not exist); '
                   f'expected {accepted}')


def restore(checkpoint: tf.train.Checkpoint, prefix: str) -> None:
  """Restores `prefix` into `checkpoint`, whose variables must all exist already.

  Raises:
    CheckpointMismatchError: the variables differ in name or shape.
    ValueError: the checkpoint's files cannot be read.
  """
  here = _variable_shapes_of(checkpoint)
  there = _variable_shapes(prefix)
  differences = _differences(here, there)
  if differences:
    source = _describe_source(prefix)
    raise CheckpointMismatchError(
        f'checkpoint {prefix} does not match this network: {differences[0]}'
        f'{f" ({len(differences)} differences in all)" if len(differences) > 1 else ""}'
        f'{f"; it was written by {source}" if source else ""}. Accepted: a checkpoint of '
        'the same agent, env and network settings (gin bindings)')
  try:
    checkpoint.restore(prefix).assert_existing_objects_matched()
  except (tf.errors.OpError, AssertionError, ValueError) as e:
    raise ValueError(f'cannot read checkpoint {prefix}: {type(e).__name__}: '
                     f'{_first_line(e)}') from e


def _variable_shapes(prefix: str) -> Dict[str, List[int]]:
  try:
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  except (tf.errors.OpError, ValueError) as e:
    raise ValueError(f'cannot read checkpoint {prefix}: {type(e).__name__}: '
                     f'{_first_line(e)}') from e
  return {name[:-len(_SUFFIX)] if name.endswith(_SUFFIX) else name: list(shape)
          for name, shape in shapes.items() if not name.startswith(_BOOKKEEPING)}


def _variable_shapes_of(checkpoint: tf.train.Checkpoint) -> Dict[str, List[int]]:
  # The names TensorFlow would save them under: write them once, to a scratch place.
  with tempfile.TemporaryDirectory(prefix='seed-ckpt-match-') as scratch:
    return _variable_shapes(checkpoint.write(os.path.join(scratch, 'here')))


def _differences(here: Dict[str, List[int]], there: Dict[str, List[int]]) -> List[str]:
  found = []
  for name in sorted(set(here) | set(there)):
    if name not in there:
      found.append(f'{name} {here[name]} is missing from the checkpoint')
    elif name not in here:
      found.append(f'{name} {there[name]} is in the checkpoint but not in this network')
    elif here[name] != there[name]:
      found.append(f'{name} is {there[name]} in the checkpoint, {here[name]} here')
  return found


def _first_line(error: BaseException) -> str:
  return (str(error).strip().splitlines() or [''])[0]


def _describe_source(prefix: str) -> str:
  """'agent vtrace on 'Catch'' from the saved config of the run that wrote `prefix`."""
  run_dir = os.path.dirname(os.path.dirname(os.path.abspath(prefix)))
  agent = config.read_saved_flags(run_dir).get('agent', [None])[-1]
  env = None
  path = RunDir(run_dir).operative_config
  if os.path.exists(path):
    with open(path) as f:
      match = _ENV_NAME.search(f.read())
    env = match.group(1).strip() if match else None
  if agent is None and env is None:
    return ''
  return f'agent {agent or "?"} on {env or "?"} (its run directory {run_dir})'

"""The names of a run directory's files, in one place: the learner writes them, the
launchers, the experiment runner, the API, test mode and the diagnostics read them."""
import dataclasses
import os
import re
from typing import Optional

CHECKPOINTS = 'ckpt'
EPISODES_CSV = 'episodes.csv'
PROGRESS_CSV = 'progress.csv'
TRAIN_STEPS_CSV = 'train_steps.csv'
PORT = 'port'
FINISHED_JSON = 'finished.json'
OPERATIVE_CONFIG = 'operative_config.gin'
FLAGS_TXT = 'flags.txt'
EXPERIMENT_JSON = 'experiment.json'
LOCAL_SOCKET = 'learner.sock'
LOGS = 'logs'
EVALUATION = 'evaluation'

# The line of TensorFlow's checkpoint index that names the latest checkpoint.
_LATEST_LINE = re.compile(r'^model_checkpoint_path: "(.*)"$', re.M)


class _File:
  """A file or folder of the run directory: `RunDir(root).<attribute>` is its path."""

  def __init__(self, *names: str):
    self._names = names

  def __get__(self, run_dir: 'RunDir', owner: type) -> str:
    return os.path.join(run_dir.root, *self._names)


@dataclasses.dataclass(frozen=True)
class RunDir:
  """The paths of one run directory's files, by what they hold."""
  root: str

  checkpoints = _File(CHECKPOINTS)  # ckpt-N.* and TensorFlow's index, `checkpoint`
  episodes_csv = _File(EPISODES_CSV)  # every training episode (seed.run_dir.records)
  progress_csv = _File(PROGRESS_CSV)  # a line each progress interval
  train_steps_csv = _File(TRAIN_STEPS_CSV)  # each train step's logs (--log_train_steps)
  port = _File(PORT)  # the port the learner bound, once it serves
  finished_json = _File(FINISHED_JSON)  # the run reached its goal (seed.run_dir.status)
  operative_config = _File(OPERATIVE_CONFIG)  # the gin config the learner ran with
  flags_txt = _File(FLAGS_TXT)  # the learner's flags, one a line
  experiment_json = _File(EXPERIMENT_JSON)  # the experiment runner's settings
  local_socket = _File(LOCAL_SOCKET)  # where a local launcher puts the Unix socket
  logs = _File(LOGS)
  learner_log = _File(LOGS, 'learner.log')
  evaluation = _File(EVALUATION)  # test mode's reports and TensorBoard events

  def actor_log(self, actor_id: int) -> str:
    return os.path.join(self.logs, f'actor_{actor_id}.log')

  def latest_checkpoint(self) -> Optional[str]:
    """The prefix of the latest complete checkpoint (RUN/ckpt/ckpt-N) as TensorFlow's
    index names it, or None; read without TensorFlow."""
    try:
      with open(os.path.join(self.checkpoints, 'checkpoint')) as f:
        found = _LATEST_LINE.search(f.read())
    except FileNotFoundError:
      return None
    return os.path.join(self.checkpoints, os.path.basename(found.group(1))) if found else None

  def write_port(self, port: int) -> None:
    """The port actually bound (port 0 in tests picks one), whole or absent."""
    tmp = f'{self.port}.tmp'
    with open(tmp, 'w') as f:
      f.write(f'{port}\n')
    os.replace(tmp, self.port)

  def read_port(self) -> Optional[int]:
    """The port the learner wrote, or None before it serves."""
    try:
      with open(self.port) as f:
        return int(f.read())
    except FileNotFoundError:
      return None

  def remove_port(self) -> None:
    """Forgets a previous learner's port, before starting one: a launcher waiting for the
    new learner's must not read it."""
    if os.path.exists(self.port):
      os.remove(self.port)

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


@dataclasses.dataclass(frozen=True)
class RunDir:
  """The paths of one run directory's files, by what they hold."""
  root: str

  def _path(self, *names: str) -> str:
    return os.path.join(self.root, *names)

  @property
  def checkpoints(self) -> str:
    """The learner's checkpoints: ckpt-N.* and TensorFlow's index, `checkpoint`."""
    return self._path(CHECKPOINTS)

  @property
  def episodes_csv(self) -> str:
    """Every training and evaluation episode (seed.run_dir.records)."""
    return self._path(EPISODES_CSV)

  @property
  def progress_csv(self) -> str:
    """A line each progress interval: frames, steps, rates (seed.run_dir.records)."""
    return self._path(PROGRESS_CSV)

  @property
  def train_steps_csv(self) -> str:
    """Each train step's logs, with --log_train_steps."""
    return self._path(TRAIN_STEPS_CSV)

  @property
  def port(self) -> str:
    """The port the learner bound, written once it serves."""
    return self._path(PORT)

  @property
  def finished_json(self) -> str:
    """Written when the run reached its goal (seed.run_dir.status)."""
    return self._path(FINISHED_JSON)

  @property
  def operative_config(self) -> str:
    """The gin config the learner ran with."""
    return self._path(OPERATIVE_CONFIG)

  @property
  def flags_txt(self) -> str:
    """The learner's flags, one a line."""
    return self._path(FLAGS_TXT)

  @property
  def experiment_json(self) -> str:
    """The experiment runner's settings and the layer each came from."""
    return self._path(EXPERIMENT_JSON)

  @property
  def local_socket(self) -> str:
    """Where a local launcher puts the learner's Unix socket."""
    return self._path(LOCAL_SOCKET)

  @property
  def logs(self) -> str:
    return self._path(LOGS)

  @property
  def learner_log(self) -> str:
    return self._path(LOGS, 'learner.log')

  def actor_log(self, actor_id: int) -> str:
    return self._path(LOGS, f'actor_{actor_id}.log')

  @property
  def evaluation(self) -> str:
    """Test mode's reports (seed.evaluate) and their TensorBoard events."""
    return self._path(EVALUATION)

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

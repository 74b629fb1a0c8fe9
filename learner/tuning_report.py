"""The mean episode return, for a Vertex AI hyperparameter tuning trial to compare.

cloudml-hypertune writes it where Vertex's tuning service reads it (a file named by
CLOUD_ML_HP_METRIC_FILE, /tmp/hypertune/output.metrics by default); the tag must be the
study's metric id. A trial whose metric cannot be written would train to its end and
report nothing, a sweep failing in silence: the learner refuses to start such a trial
(MetricFileUnwritable, exit 2) and stops one whose report fails later (ReportFailed,
exit 1). TensorFlow-free: the learner checks the file before TensorFlow loads.
"""
import os

METRIC_FILE_VARIABLE = 'CLOUD_ML_HP_METRIC_FILE'
DEFAULT_METRIC_FILE = '/tmp/hypertune/output.metrics'  # cloudml-hypertune's own default


class MetricFileUnwritable(ValueError):
  """The tuning service's metric file cannot be made or written, at start."""


class ReportFailed(Exception):
  """A report could not be written while training."""


def metric_file() -> str:
  return os.environ.get(METRIC_FILE_VARIABLE, DEFAULT_METRIC_FILE)


def check_metric_file(metric_id: str) -> None:
  """Makes the metric file's folder and opens the file for appending (nothing written);
  MetricFileUnwritable naming the file, the error and what is needed otherwise."""
  path = metric_file()
  try:
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'a'):
      pass
  except OSError as e:
    raise MetricFileUnwritable(
        f'--hypertune_metric={metric_id}: cannot write the tuning service\'s metric file '
        f'{path} ({e.strerror or e}, as uid {os.getuid()}): this trial would report '
        f'nothing; expected {METRIC_FILE_VARIABLE} to name a file this user can write (the '
        'learner image makes /var/hypertune writable by its uid 1000)') from None


class TuningReport:
  """Reports `metric_id` through cloudml-hypertune; refuses a file it cannot write."""

  def __init__(self, metric_id: str):
    import hypertune  # pylint: disable=g-import-not-at-top
    check_metric_file(metric_id)
    self._metric_id = metric_id
    self._hypertune = hypertune.HyperTune()

  def report(self, mean_return: float, env_frames: int) -> None:
    """One report; ReportFailed when it cannot be written."""
    try:
      self._hypertune.report_hyperparameter_tuning_metric(
          hyperparameter_metric_tag=self._metric_id, metric_value=mean_return,
          global_step=env_frames)
    except OSError as e:
      raise ReportFailed(f'cannot report {self._metric_id} to the tuning service: writing '
                         f'{metric_file()} failed ({e.strerror or e}, as uid '
                         f'{os.getuid()})') from None

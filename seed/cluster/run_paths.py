"""The run directory of a cluster job, and gs:// paths seen through Vertex's /gcs/ mount.

Vertex AI mounts Cloud Storage at /gcs/ in every replica (Cloud Storage FUSE), so
the learner reads and writes gs://BUCKET/PATH as the file /gcs/BUCKET/PATH: its
checkpoints outlive a preempted replica and a resubmitted job finds them. With a
job's baseOutputDirectory set, Vertex passes AIP_CHECKPOINT_DIR=<base>/checkpoints/
and AIP_TENSORBOARD_LOG_DIR=<base>/logs/ (<base>/<trial id>/... in a tuning trial):
the run directory is <base> (or its trial folder), TensorBoard's is the logs folder.
"""
import os
from typing import Mapping, Optional

GCS_PREFIX = 'gs://'
FUSE_ROOT = '/gcs/'


def local_path(path: str) -> str:
  """gs://BUCKET/PATH as /gcs/BUCKET/PATH; any other path as it is."""
  if path.startswith(GCS_PREFIX):
    rest = path[len(GCS_PREFIX):]
    if not rest.split('/')[0]:
      raise ValueError(f'{path!r} names no bucket; expected gs://BUCKET/PATH')
    return FUSE_ROOT + rest
  return path


def run_dir(explicit: Optional[str], environ: Mapping[str, str]) -> str:
  """--run_dir, else the folder above Vertex's AIP_CHECKPOINT_DIR, as a local path."""
  if explicit:
    return local_path(explicit)
  checkpoints = environ.get('AIP_CHECKPOINT_DIR')
  if checkpoints:
    return os.path.dirname(local_path(checkpoints).rstrip('/'))
  raise ValueError('no run directory: pass --run_dir (or set SEED_RUN_DIR), or run in a '
                   'Vertex AI job with a base output directory (AIP_CHECKPOINT_DIR)')


def job_id(explicit: Optional[str], environ: Mapping[str, str]) -> Optional[str]:
  """The job's id, the same in every replica and restart of it: --job_id, else Vertex's
  CLOUD_ML_JOB_ID, else slurm-$SLURM_JOB_ID; None outside a cluster job."""
  if explicit:
    return explicit
  if environ.get('CLOUD_ML_JOB_ID'):
    return environ['CLOUD_ML_JOB_ID']
  if environ.get('SLURM_JOB_ID'):
    return 'slurm-' + environ['SLURM_JOB_ID']
  return None


def summary_dir(explicit: Optional[str], environ: Mapping[str, str]) -> Optional[str]:
  """--summary_dir, else Vertex's AIP_TENSORBOARD_LOG_DIR; None: the run directory."""
  chosen = explicit or environ.get('AIP_TENSORBOARD_LOG_DIR')
  return local_path(chosen).rstrip('/') if chosen else None

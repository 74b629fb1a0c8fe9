"""TLS and a shared token for one cluster job, made by its learner and found by its actors.

Replicas of a cluster job share the run directory (Cloud Storage through /gcs/ on
Vertex AI, the shared file system on Slurm) and nothing else before they connect.
The learner makes a CA, a certificate for the host name actors dial and a token
(make_certs.sh, the script the docs show) into RUN_DIR/tls/<job id>-<host>/ and
writes `ready` last; actors wait for `ready`. Nothing secret goes into the job's
spec, which anyone allowed to list jobs can read; the run directory is as private
as the checkpoints in it. The CA's key is deleted at once: nothing else is signed.

The folder is named by the job and the learner's host, so a resubmitted or
requeued job (another host, perhaps) never picks up an earlier job's files, and a
learner restarted inside the same job reuses its own (actors still hold that CA).
"""
import dataclasses
import os
import subprocess
import time

_MAKE_CERTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'make_certs.sh')
READY = 'ready'


@dataclasses.dataclass(frozen=True)
class LearnerFiles:
  cert_file: str
  key_file: str
  token_file: str


@dataclasses.dataclass(frozen=True)
class ActorFiles:
  ca_file: str
  token_file: str


def folder(run_dir: str, job_id: str, learner_host: str) -> str:
  for what, value in (('job id', job_id), ('learner host', learner_host)):
    if not value or '/' in value or value in ('.', '..'):
      raise ValueError(f'{what} {value!r} cannot name a folder')
  return os.path.join(run_dir, 'tls', f'{job_id}-{learner_host}')


def learner_files(directory: str) -> LearnerFiles:
  """Where the learner's files are in `directory` (make_certs.sh's names)."""
  return LearnerFiles(*(os.path.join(directory, name) for name in ('tls.crt', 'tls.key', 'token')))


def actor_files(directory: str) -> ActorFiles:
  return ActorFiles(os.path.join(directory, 'ca.crt'), os.path.join(directory, 'token'))


def publish(directory: str, learner_host: str) -> LearnerFiles:
  """The learner's side: makes the files once per job and host, then marks them ready."""
  files = learner_files(directory)
  if os.path.exists(os.path.join(directory, READY)):
    return files
  result = subprocess.run(['bash', _MAKE_CERTS, directory, learner_host],
                          capture_output=True, text=True, check=False)
  if result.returncode != 0:
    raise RuntimeError(f'could not make TLS files in {directory}: '
                       f'{(result.stderr or result.stdout).strip()}')
  os.remove(os.path.join(directory, 'ca.key'))
  # Written last and only once the others are closed: actors read nothing half made.
  with open(os.path.join(directory, READY), 'w') as f:
    f.write(f'{learner_host}\n')
  return files


def await_files(directory: str, timeout_s: float, poll_s: float = 2.0) -> ActorFiles:
  """The actors' side: waits for the learner to publish (it may start minutes later)."""
  deadline = time.monotonic() + timeout_s
  while not os.path.exists(os.path.join(directory, READY)):
    if time.monotonic() >= deadline:
      raise TimeoutError(f'the learner published no TLS files in {directory} within '
                         f'{timeout_s:.0f} s; is it running, with the same run directory and '
                         'job id? (--bootstrap_timeout_s to wait longer)')
    time.sleep(poll_s)
  return actor_files(directory)

"""Vertex AI job specs for seed: the learner and actor worker pools, and tuning studies.

Pure functions from settings to the dicts gcloud's --config takes (a CustomJobSpec,
or a HyperparameterTuningJob whose trialJobSpec is one). Python 3 standard library
only: this runs on a laptop next to gcloud, with no virtual environment.

Only what the user chose goes into a spec: seed-job, the entry point of every
replica, works out its role, the learner's address, the run directory and the TLS
files and token from what Vertex AI gives each replica. No secret is ever in a spec.
"""
import dataclasses
import json
import math
import re
from typing import Dict, List, Mapping, Optional, Sequence

ENTRY_POINT = ['seed-job']
SEED_PREFIX = 'SEED_'

# Vertex's GPU accelerator types (gcloud 528's v1 API, less the end-of-life K80) and
# the machine families each attaches to. TPUs are left out: the learner image is a
# CPU or CUDA build of TensorFlow.
ACCELERATOR_MACHINES = {
    'NVIDIA_TESLA_T4': ('n1-',),
    'NVIDIA_TESLA_P4': ('n1-',),
    'NVIDIA_TESLA_P100': ('n1-',),
    'NVIDIA_TESLA_V100': ('n1-',),
    'NVIDIA_L4': ('g2-',),
    'NVIDIA_TESLA_A100': ('a2-highgpu-', 'a2-megagpu-'),
    'NVIDIA_A100_80GB': ('a2-ultragpu-',),
    'NVIDIA_H100_80GB': ('a3-highgpu-',),
    'NVIDIA_H100_MEGA_80GB': ('a3-megagpu-',),
    'NVIDIA_H200_141GB': ('a3-ultragpu-',),
    'NVIDIA_B200': ('a4-highgpu-',),
}
NO_ACCELERATOR = 'none'
# Machine families that come with their GPUs: none of them runs without one.
GPU_ONLY_FAMILIES = ('g2-', 'a2-', 'a3-', 'a4-')

SCALES = {'linear': 'UNIT_LINEAR_SCALE', 'log': 'UNIT_LOG_SCALE',
          'reverse_log': 'UNIT_REVERSE_LOG_SCALE'}
ALGORITHMS = {'bayesian': 'ALGORITHM_UNSPECIFIED', 'grid': 'GRID_SEARCH',
              'random': 'RANDOM_SEARCH'}
_PARAMETER_ID = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_BINDING = re.compile(r'^([A-Za-z_][\w.]*/)?[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$')


def check_machine(pool: str, machine_type: str, accelerator_type: str,
                  accelerator_count: int) -> None:
  """Raises ValueError when a pool's machine and accelerator do not go together."""
  flag = f'--{pool}_accelerator_type'
  if accelerator_type == NO_ACCELERATOR:
    if accelerator_count:
      raise ValueError(f'--{pool}_accelerator_count={accelerator_count} with {flag}=none; '
                       f'pass {flag} too, or a count of 0')
    if machine_type.startswith(GPU_ONLY_FAMILIES):
      raise ValueError(f'--{pool}_machine_type={machine_type} comes with GPUs: pass {flag} '
                       f'(for its family: {_accelerators_for(machine_type)}) or a machine '
                       'without GPUs, e.g. n1-standard-8')
    return
  if accelerator_type not in ACCELERATOR_MACHINES:
    raise ValueError(f'unknown accelerator {flag}={accelerator_type}; accepted: none, '
                     f'{", ".join(ACCELERATOR_MACHINES)}')
  if accelerator_count < 1:
    raise ValueError(f'--{pool}_accelerator_count={accelerator_count} with '
                     f'{flag}={accelerator_type}; expected an integer >= 1')
  families = ACCELERATOR_MACHINES[accelerator_type]
  if not machine_type.startswith(families):
    raise ValueError(f'{accelerator_type} attaches to {" or ".join(f + "*" for f in families)} '
                     f'machine types, not --{pool}_machine_type={machine_type}')
  built_in = re.search(r'-(\d+)g$', machine_type)  # a2-highgpu-2g: two GPUs, no other count
  if built_in and int(built_in.group(1)) != accelerator_count:
    raise ValueError(f'--{pool}_machine_type={machine_type} has {built_in.group(1)} GPU(s); '
                     f'pass --{pool}_accelerator_count={built_in.group(1)}, not '
                     f'{accelerator_count}')


def _accelerators_for(machine_type: str) -> str:
  return ', '.join(a for a, families in ACCELERATOR_MACHINES.items()
                   if machine_type.startswith(families)) or 'see the Vertex AI docs'


def env_list(settings: Mapping[str, object]) -> List[Dict[str, str]]:
  """SEED_<FLAG> variables, the way seed-learner and seed-actor read their flags.

  A list value is a multi-value flag: one value per line. None and [] are left out.
  """
  env = []
  for flag, value in settings.items():
    if value is None or value == []:
      continue
    if isinstance(value, bool):
      text = 'true' if value else 'false'
    elif isinstance(value, (list, tuple)):
      text = '\n'.join(str(v) for v in value)
    else:
      text = str(value)
    env.append({'name': SEED_PREFIX + flag.upper(), 'value': text})
  return env


@dataclasses.dataclass(frozen=True)
class Pool:
  """One worker pool: pool 0 is the learner (one replica), pool 1 the actors."""
  machine_type: str
  replica_count: int
  image_uri: str
  settings: Mapping[str, object]  # flag name -> value, passed as SEED_<FLAG>
  accelerator_type: str = NO_ACCELERATOR
  accelerator_count: int = 0


def worker_pool(pool: Pool, args: Sequence[str] = ()) -> dict:
  machine = {'machineType': pool.machine_type}
  if pool.accelerator_type != NO_ACCELERATOR:
    machine['acceleratorType'] = pool.accelerator_type
    machine['acceleratorCount'] = pool.accelerator_count
  container = {'imageUri': pool.image_uri, 'command': list(ENTRY_POINT)}
  if args:
    container['args'] = list(args)
  env = env_list(pool.settings)
  if env:
    container['env'] = env
  return {'machineSpec': machine, 'replicaCount': pool.replica_count,
          'containerSpec': container}


def run_directory(bucket: str, run_name: str) -> str:
  """gs://BUCKET[/PREFIX]/runs/RUN_NAME: the same name resumes the same run."""
  return f'{bucket.rstrip("/")}/runs/{run_name}'


def custom_job_spec(learner: Pool, actors: Pool, *, run_dir: str, spot: bool = False,
                    timeout_s: Optional[int] = None, service_account: Optional[str] = None,
                    tensorboard: Optional[str] = None, args: Sequence[str] = ()) -> dict:
  """A CustomJobSpec: learner pool, actor pool, the run directory as base output;
  `timeout_s` the longest it may run (Vertex ends it then; its default is 7 days)."""
  spec = {
      'workerPoolSpecs': [worker_pool(learner, args), worker_pool(actors, args)],
      # Vertex derives AIP_CHECKPOINT_DIR=<dir>/checkpoints/ and
      # AIP_TENSORBOARD_LOG_DIR=<dir>/logs/ from it; seed-job takes the run
      # directory from the first (through the /gcs/ mount).
      'baseOutputDirectory': {'outputUriPrefix': run_dir},
  }
  if spot:
    spec.setdefault('scheduling', {})['strategy'] = 'SPOT'
  if timeout_s is not None:
    spec.setdefault('scheduling', {})['timeout'] = f'{timeout_s}s'  # a protobuf Duration
  if service_account:
    spec['serviceAccount'] = service_account
  if tensorboard:
    spec['tensorboard'] = tensorboard
  return spec


@dataclasses.dataclass(frozen=True)
class SweepParameter:
  """One parameter of a tuning study and the gin binding its value goes to."""
  parameter_id: str
  binding: str           # Configurable.parameter
  spec: dict             # the StudySpec.ParameterSpec less its parameterId

  @property
  def sweep_binding(self) -> str:
    """seed-job's argument: Vertex appends --ID=VALUE, seed-job binds it."""
    return f'--sweep_binding={self.parameter_id}={self.binding}'


SWEEP_FORMS = ('ID=Configurable.parameter:double:MIN:MAX[:linear|log|reverse_log], '
               ':int:MIN:MAX[:SCALE], :discrete:V1,V2,... (numbers) or '
               ':categorical:A,B,... (plain words, no quotes)')


def parse_sweep_parameter(text: str) -> SweepParameter:
  """--sweep_parameter=learning_rate=VTraceConfig.learning_rate:double:1e-4:1e-2:log."""
  def fail(why: str):
    raise ValueError(f'--sweep_parameter={text}: {why}; expected {SWEEP_FORMS}, e.g. '
                     'learning_rate=VTraceConfig.learning_rate:double:1e-4:1e-2:log')
  parameter_id, equals, rest = text.partition('=')
  if not equals or not _PARAMETER_ID.match(parameter_id):
    fail(f'the parameter id {parameter_id!r} is not a name (letters, digits, _)')
  binding, _, rest = rest.partition(':')
  if not _BINDING.match(binding):
    fail(f'{binding!r} is not a gin Configurable.parameter')
  kind, _, values = rest.partition(':')
  if kind in ('double', 'int'):
    parts = values.split(':')
    if len(parts) not in (2, 3):
      fail(f'{kind} takes MIN:MAX[:SCALE]')
    scale = parts[2] if len(parts) == 3 else 'linear'
    if scale not in SCALES:
      fail(f'unknown scale {scale!r} (accepted: {", ".join(SCALES)})')
    number = _finite_float if kind == 'double' else _integer
    low, high = number(parts[0], fail), number(parts[1], fail)
    if not low < high:
      fail(f'MIN {parts[0]} is not below MAX {parts[1]}')
    if scale != 'linear' and low <= 0:
      fail(f'a {scale} scale needs MIN > 0, got {parts[0]}')
    key = 'doubleValueSpec' if kind == 'double' else 'integerValueSpec'
    spec = {key: {'minValue': low, 'maxValue': high}, 'scaleType': SCALES[scale]}
  elif kind == 'discrete':
    items = [_finite_float(v, fail) for v in values.split(',')]
    if len(set(items)) != len(items):
      fail('repeated values')
    spec = {'discreteValueSpec': {'values': sorted(items)}}
  elif kind == 'categorical':
    items = values.split(',')
    # seed-job quotes what is not a number or boolean; a quote here would be doubled.
    if any(not v or not re.match(r'^[\w.:+-]+$', v) for v in items):
      fail(f'categorical values must be plain words (letters, digits, _ . : + -), got {values!r}')
    if len(set(items)) != len(items):
      fail('repeated values')
    spec = {'categoricalValueSpec': {'values': items}}
  else:
    fail(f'unknown kind {kind!r} (accepted: double, int, discrete, categorical)')
  return SweepParameter(parameter_id, binding, spec)


def _finite_float(text: str, fail) -> float:
  try:
    value = float(text)
  except ValueError:
    value = math.nan
  if not math.isfinite(value):
    fail(f'{text!r} is not a finite number')
  return value


def _integer(text: str, fail) -> int:
  try:
    return int(text)
  except ValueError:
    fail(f'{text!r} is not an integer')


def hp_tuning_job(trial_job_spec: dict, parameters: Sequence[SweepParameter], *,
                  metric_id: str, algorithm: str, max_trial_count: int,
                  parallel_trial_count: int) -> dict:
  """A HyperparameterTuningJob (less displayName, which gcloud's flag sets)."""
  study = {
      'metrics': [{'metricId': metric_id, 'goal': 'MAXIMIZE'}],
      'parameters': [{'parameterId': p.parameter_id, **p.spec} for p in parameters],
  }
  if ALGORITHMS[algorithm] != 'ALGORITHM_UNSPECIFIED':
    study['algorithm'] = ALGORITHMS[algorithm]
  return {'studySpec': study, 'trialJobSpec': trial_job_spec,
          'maxTrialCount': max_trial_count, 'parallelTrialCount': parallel_trial_count}


def to_config_text(document) -> str:
  """JSON as gcloud's --config reads it: YAML 1.1, where a float needs a '.' (1.0e-05)."""
  floats = []

  def mark(value):
    if isinstance(value, float):
      floats.append(value)
      return f'\0float{len(floats) - 1}\0'  # a NUL: no string from a command line has one
    if isinstance(value, dict):
      return {k: mark(v) for k, v in value.items()}
    if isinstance(value, list):
      return [mark(v) for v in value]
    return value

  def float_text(match) -> str:
    text = repr(floats[int(match.group(1))])
    mantissa, e, exponent = text.partition('e')
    return mantissa + ('' if '.' in mantissa else '.0') + e + exponent

  return re.sub(r'"\\u0000float(\d+)\\u0000"', float_text, json.dumps(mark(document), indent=2))

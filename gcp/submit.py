#!/usr/bin/env python3
"""Submits a seed training run, or a hyperparameter sweep, to Vertex AI with gcloud.

  gcp/train_atari_vtrace.sh --project=P --region=us-central1 --bucket=gs://B \\
      --learner_image=us-central1-docker.pkg.dev/P/seed/seed-learner:gpu \\
      --actor_image=us-central1-docker.pkg.dev/P/seed/seed-actor:latest [--dry_run]

Worker pool 0 is the learner, pool 1 the actors; both run seed-job, which finds its
role and the learner from Vertex's CLUSTER_SPEC. The run directory is
BUCKET/runs/RUN_NAME: submitting again with the same --run_name resumes the run.
Any other --FLAG=VALUE goes to the learner and/or the actors, whichever defines
FLAG, as SEED_<FLAG> (e.g. --env=atari:Breakout, --target_return=20,
--max_env_frames=0 for no budget). --dry_run prints the spec and submits nothing.
Python 3 standard library only. gcp/README.md has the setup, costs and sweeps.
"""
import argparse
import dataclasses
import datetime
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Mapping, Optional, Tuple

import repo_source
import settings
import vertex_spec
from settings import BadInput
from vertex_spec import NO_ACCELERATOR


@dataclasses.dataclass(frozen=True)
class Scenario:
  """A scenario's defaults; every one of them has a flag to change it."""
  agent: str
  gin_file: str                  # in the images, relative to their WORKDIR /opt/seed
  learner_machine_type: str
  learner_accelerator_type: str
  learner_accelerator_count: int
  actor_replicas: int
  actor_machine_type: str
  envs_per_actor: int
  actors_per_replica: int        # actor processes per replica: about one core each
  learner_flags: Mapping[str, object]  # a budget, so that a run ends by itself
  # scheduling.timeout: Vertex ends the job then, whatever happens. A job ends when its
  # learner (pool 0) exits 0; this bounds the cost of one whose learner never does.
  timeout: str


# An actor process steps its envs on about one core (docs/performance.md), so a
# replica runs one per vCPU (seed-job --actors_per_replica): small actor machines,
# several replicas. Why these
# numbers, and what they cost: gcp/README.md.
SCENARIOS = {
    'toy_vtrace': Scenario('vtrace', 'gin/toy/vtrace.gin', 'e2-standard-4', 'none', 0,
                           2, 'e2-standard-4', 4, 1,
                           {'target_return': 400, 'max_env_frames': 2_000_000}, '6h'),
    'atari_vtrace': Scenario('vtrace', 'gin/atari/vtrace.gin', 'n1-standard-8',
                             'NVIDIA_TESLA_T4', 1, 8, 'e2-standard-4', 4, 4,
                             {'max_env_frames': 50_000_000}, '3d'),
    'atari_r2d2': Scenario('r2d2', 'gin/atari/r2d2.gin', 'n1-standard-8', 'NVIDIA_TESLA_T4',
                           1, 8, 'e2-standard-4', 4, 4, {'max_env_frames': 50_000_000}, '3d'),
    'mujoco_sac': Scenario('sac', 'gin/mujoco/sac.gin', 'e2-standard-8', 'none', 0,
                           1, 'e2-standard-4', 2, 1, {'max_env_frames': 1_000_000}, '2d'),
    'mujoco_ppo': Scenario('ppo', 'gin/mujoco/ppo.gin', 'e2-standard-8', 'none', 0,
                           2, 'e2-standard-4', 4, 4, {'max_env_frames': 1_000_000}, '1d'),
    'dmc_sac': Scenario('sac', 'gin/dmc/sac.gin', 'e2-standard-8', 'none', 0,
                        1, 'e2-standard-4', 2, 1, {'max_env_frames': 1_000_000}, '2d'),
}

_PROJECT = re.compile(r'^([a-z][a-z0-9.-]*:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$')
_REGION = re.compile(r'^[a-z]+(-[a-z]+)+[0-9]+$')
_BUCKET = re.compile(r'^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/\S*)?$')
_IMAGE = re.compile(r'^[a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?(/[a-z0-9._-]+)+'
                    r'(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})?$')
_RUN_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$')
_MACHINE = re.compile(r'^[a-z][a-z0-9]*-[a-z0-9-]+$')
_TENSORBOARD = re.compile(r'^projects/[^/\s]+/locations/([^/\s]+)/tensorboards/[^/\s]+$')
_EMAIL = re.compile(r'^[^@\s]+@[^@\s]+\.[^@\s]+$')
_METRIC = re.compile(r'^[A-Za-z_][\w./-]*$')


@dataclasses.dataclass(frozen=True)
class Submission:
  group: str               # gcloud ai GROUP create: custom-jobs or hp-tuning-jobs
  spec: dict               # what --config gets
  flags: List[str]         # gcloud's flags besides --config
  run_name: str
  run_dir: str


def parse_args(argv: List[str]) -> Tuple[argparse.Namespace, List[str]]:
  parser = argparse.ArgumentParser(
      prog='submit.py', allow_abbrev=False,  # --env must not pass for --envs_per_actor
      description=__doc__.split('\n\n')[0],
      epilog='Other --FLAG=VALUE: learner/actor flags, passed as SEED_<FLAG>.')
  add = parser.add_argument
  add('--scenario', help=f'one of: {", ".join(SCENARIOS)} (the train_*.sh scripts set it)')
  add('--project', default=os.environ.get('CLOUDSDK_CORE_PROJECT'),
      help='Google Cloud project id (default: $CLOUDSDK_CORE_PROJECT)')
  add('--region', default=os.environ.get('CLOUDSDK_AI_REGION'),
      help='Vertex AI region, e.g. us-central1 (default: $CLOUDSDK_AI_REGION)')
  add('--bucket', help='gs://BUCKET[/PREFIX]: runs go to BUCKET/runs/RUN_NAME')
  add('--run_name', help='default: SCENARIO-YYYYMMDD-HHMMSS (UTC); the same name resumes')
  add('--learner_image', help='learner image URI (Artifact Registry)')
  add('--actor_image', help='actor image URI (Artifact Registry)')
  add('--learner_machine_type', help="default: the scenario's (gcp/README.md)")
  add('--learner_accelerator_type',
      help=f'none or one of: {", ".join(vertex_spec.ACCELERATOR_MACHINES)}')
  add('--learner_accelerator_count', type=int, help='GPUs on the learner')
  add('--actor_replicas', type=int, help='actor replicas (>= 1)')
  add('--actor_machine_type', help="default: the scenario's")
  add('--envs_per_actor', type=int, help='envs each actor process steps (SEED_NUM_ENVS)')
  add('--actors_per_replica', type=int,
      help='actor processes per actor replica, about one vCPU each (SEED_ACTORS_PER_REPLICA)')
  add('--gin_bindings', action='append', default=[], help='a gin binding (repeatable)')
  add('--spot', action='store_true', help='run on Spot VMs (scheduling strategy SPOT)')
  add('--timeout', help='longest the job (each trial of a sweep) may run, e.g. 90m, 36h, 7d '
      '(scheduling.timeout; default: the scenario\'s, 6h to 3d: gcp/README.md)')
  add('--tensorboard', help='Vertex TensorBoard: projects/P/locations/R/tensorboards/ID '
      '(needs --service_account)')
  add('--service_account', help='the service account the replicas run as (an email)')
  add('--sweep_parameter', action='append', default=[],
      help=f'submit a tuning job over this parameter (repeatable): {vertex_spec.SWEEP_FORMS}')
  add('--sweep_metric', help='metric id the learner reports (default: episode_return)')
  add('--sweep_algorithm', choices=list(vertex_spec.ALGORITHMS),
      help='default: bayesian (Vertex\'s default search)')
  add('--max_trial_count', type=int, help='trials in all (default: 10)')
  add('--parallel_trial_count', type=int, help='trials at once (default: 2)')
  add('--gcloud_flag', action='append', default=[],
      help='an extra gcloud flag, e.g. --gcloud_flag=--impersonate-service-account=SA')
  add('--dry_run', action='store_true', help='print the spec and the command; submit nothing')
  return parser.parse_known_args(argv)


def _require(value: Optional[str], flag: str, pattern: re.Pattern, accepted: str) -> str:
  if not value:
    raise BadInput(f'--{flag} is not set; expected {accepted}')
  if not pattern.match(value):
    raise BadInput(f'--{flag}={value} is not valid; expected {accepted}')
  return value


def _at_least(value: int, flag: str, low: int, what: str) -> None:
  if value < low:
    raise BadInput(f'--{flag}={value}; expected an integer >= {low} ({what})')


_DURATION = re.compile(r'^([0-9]+)([smhd])$')
_UNIT_S = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400}


def _timeout_s(value: Optional[str]) -> Optional[int]:
  """--timeout in seconds (None when not given); BadInput unless a positive duration."""
  if value is None:
    return None
  match = _DURATION.match(value)
  if not match or int(match.group(1)) == 0:
    raise BadInput(f'--timeout={value} is not valid; expected a positive duration: a whole '
                   'number and one of s, m, h, d, e.g. 90m, 36h or 3d')
  return int(match.group(1)) * _UNIT_S[match.group(2)]


def _where(args: argparse.Namespace) -> Tuple[str, str, str, str]:
  """(project, region, bucket, run name), checked."""
  project = _require(args.project, 'project', _PROJECT,
                     'a Google Cloud project id such as my-project-123 '
                     '(or set CLOUDSDK_CORE_PROJECT)')
  region = _require(args.region, 'region', _REGION,
                    'a Vertex AI region such as us-central1 or europe-west4 '
                    '(or set CLOUDSDK_AI_REGION)')
  bucket = _require(args.bucket, 'bucket', _BUCKET,
                    'gs://BUCKET or gs://BUCKET/PREFIX, a Cloud Storage bucket the job\'s '
                    'service account can write').rstrip('/')
  run_name = args.run_name or (
      f'{args.scenario}-{datetime.datetime.now(datetime.timezone.utc):%Y%m%d-%H%M%S}')
  _require(run_name, 'run_name', _RUN_NAME,
           'letters, digits, . _ - (at most 100, starting with a letter or digit)')
  return project, region, bucket, run_name


def _images(args: argparse.Namespace) -> Tuple[str, str]:
  form = 'an image URI such as us-central1-docker.pkg.dev/PROJECT/seed/{}:TAG (Artifact Registry)'
  return (_require(args.learner_image, 'learner_image', _IMAGE, form.format('seed-learner')),
          _require(args.actor_image, 'actor_image', _IMAGE, form.format('seed-actor')))


def _check_machines(args: argparse.Namespace) -> None:
  for pool in ('learner', 'actor'):
    _require(getattr(args, f'{pool}_machine_type'), f'{pool}_machine_type', _MACHINE,
             'a Compute Engine machine type such as n1-standard-8 or e2-standard-4')
  _at_least(args.actor_replicas, 'actor_replicas', 1, 'actor replicas in worker pool 1')
  _at_least(args.envs_per_actor, 'envs_per_actor', 1, 'envs stepped by each actor')
  _at_least(args.actors_per_replica, 'actors_per_replica', 1, 'actor processes per replica')
  _at_least(args.learner_accelerator_count, 'learner_accelerator_count', 0, 'GPUs')
  try:
    vertex_spec.check_machine('learner', args.learner_machine_type,
                              args.learner_accelerator_type, args.learner_accelerator_count)
  except ValueError as e:
    raise BadInput(str(e)) from None
  if args.actor_machine_type.startswith(vertex_spec.GPU_ONLY_FAMILIES):
    raise BadInput(f'--actor_machine_type={args.actor_machine_type} comes with GPUs, which '
                   'actors do not use; expected a CPU machine type such as e2-standard-4')
  gpu_tag = _gpu_tag(args.learner_image)
  if gpu_tag and args.learner_accelerator_type == NO_ACCELERATOR:
    raise BadInput(f'--learner_image={args.learner_image} is a GPU build (its tag {gpu_tag!r}) '
                   f'and --learner_machine_type={args.learner_machine_type} has no '
                   'accelerator: its CUDA libraries would go unused; pass '
                   '--learner_accelerator_type (e.g. NVIDIA_TESLA_T4 with an n1 machine), or '
                   'the CPU image (seed-learner:cpu-TAG, docker/Dockerfile.learner without '
                   'LEARNER_EXTRA)')


_GPU_TAG = re.compile(r'(^|[-_.])(gpu|cuda)([-_.]|\d|$)', re.IGNORECASE)


def _gpu_tag(image: str) -> Optional[str]:
  """The image's tag when it names a GPU build (gpu, gpu-abc123, cuda12, ...), else None
  (a digest alone says nothing)."""
  name = image.rsplit('/', 1)[-1].split('@')[0]
  tag = name.partition(':')[2]
  return tag if tag and _GPU_TAG.search(tag) else None


def _check_tensorboard(args: argparse.Namespace, region: str) -> None:
  if args.tensorboard:
    match = _TENSORBOARD.match(args.tensorboard)
    if not match:
      raise BadInput(f'--tensorboard={args.tensorboard} is not valid; expected '
                     'projects/PROJECT/locations/REGION/tensorboards/ID')
    if match.group(1) != region:
      raise BadInput(f'--tensorboard={args.tensorboard} is in {match.group(1)}; the job runs '
                     f'in --region={region}: use a TensorBoard instance of that region')
    if not args.service_account:
      raise BadInput('--tensorboard needs --service_account: Vertex AI writes TensorBoard '
                     'logs only for jobs that run as a service account')
  if args.service_account:
    _require(args.service_account, 'service_account', _EMAIL,
             'a service account email such as seed-trainer@PROJECT.iam.gserviceaccount.com')


def build(args: argparse.Namespace, extras: List[str]) -> Submission:
  """What to submit for these arguments; BadInput when one is wrong."""
  if args.scenario not in SCENARIOS:
    raise BadInput(f'unknown scenario {args.scenario!r}; known scenarios: '
                   f'{", ".join(SCENARIOS)}')
  scenario = SCENARIOS[args.scenario]
  if args.learner_accelerator_count is None and args.learner_accelerator_type is not None:
    # A type given without a count: none means 0 GPUs, any other one.
    args.learner_accelerator_count = int(args.learner_accelerator_type != NO_ACCELERATOR)
  for name, value in vars(args).items():  # the scenario's defaults for flags not given
    if value is None and hasattr(scenario, name):
      setattr(args, name, getattr(scenario, name))
  project, region, bucket, run_name = _where(args)
  learner_image, actor_image = _images(args)
  _check_machines(args)
  _check_tensorboard(args, region)
  timeout_s = _timeout_s(args.timeout)

  known = repo_source.read_flags()
  configurables = repo_source.read_configurables()
  agents = repo_source.read_agent_configs() or {}
  agent_class = agents.get(scenario.agent, scenario.agent)
  agent_configs = set(agents.values())
  for binding in args.gin_bindings:
    settings.check_binding(binding, f'--gin_bindings={binding}', agent_class, configurables,
                           agent_configs)
  learner_extra, actor_extra = settings.pass_through(extras, known, set(vars(args)))
  learner_settings = {'agent': scenario.agent, 'gin_file': scenario.gin_file,
                      'gin_bindings': args.gin_bindings,
                      **scenario.learner_flags, **learner_extra}
  actor_settings = {'gin_file': scenario.gin_file, 'gin_bindings': args.gin_bindings,
                    'num_envs': args.envs_per_actor,
                    'actors_per_replica': args.actors_per_replica, **actor_extra}

  if known is not None:  # --learner_devices against the learner machine's GPUs
    problem = known.learner_gpus_refusal(str(learner_settings.get('learner_devices') or ''),
                                         args.learner_accelerator_count or 0,
                                         '--learner_accelerator_count')
    if problem:
      raise BadInput(problem)

  sweep = sweep_parameters(args, known, agent_class, configurables, learner_settings,
                           agent_configs)
  trial_args = [p.sweep_binding for p in sweep]
  if sweep:
    learner_settings['hypertune_metric'] = args.sweep_metric
  learner = vertex_spec.Pool(args.learner_machine_type, 1, learner_image, learner_settings,
                             args.learner_accelerator_type, args.learner_accelerator_count)
  actors = vertex_spec.Pool(args.actor_machine_type, args.actor_replicas, actor_image,
                            actor_settings)
  run_dir = vertex_spec.run_directory(bucket, run_name)
  job = vertex_spec.custom_job_spec(
      learner, actors, run_dir=run_dir, spot=args.spot, timeout_s=timeout_s,
      service_account=args.service_account, tensorboard=args.tensorboard, args=trial_args)
  flags = [f'--project={project}', f'--region={region}', f'--display-name={run_name}']
  labels = [f'--labels=seed_scenario={args.scenario}']
  if not sweep:
    return Submission('custom-jobs', job, flags + labels, run_name, run_dir)
  spec = vertex_spec.hp_tuning_job(
      job, sweep, metric_id=args.sweep_metric, algorithm=args.sweep_algorithm,
      max_trial_count=args.max_trial_count, parallel_trial_count=args.parallel_trial_count)
  counts = [f'--max-trial-count={args.max_trial_count}',
            f'--parallel-trial-count={args.parallel_trial_count}']
  return Submission('hp-tuning-jobs', spec, flags + counts + labels, run_name, run_dir)


def sweep_parameters(args: argparse.Namespace, known: Optional[repo_source.Flags],
                     agent_class: str, configurables: Optional[Dict[str, set]],
                     learner_settings: Mapping[str, object], agent_configs=()
                     ) -> List[vertex_spec.SweepParameter]:
  """The --sweep_parameter list, checked; fills the sweep flags' defaults."""
  sweep_only = ('sweep_metric', 'sweep_algorithm', 'max_trial_count', 'parallel_trial_count')
  if not args.sweep_parameter:
    given = [f'--{name}' for name in sweep_only if getattr(args, name) is not None]
    if given:
      raise BadInput(f'{", ".join(given)} without --sweep_parameter; add the parameters to '
                     'sweep, e.g. --sweep_parameter=learning_rate='
                     f'{agent_class}.learning_rate:double:1e-4:1e-2:log')
    return []
  args.sweep_metric = args.sweep_metric or 'episode_return'
  args.sweep_algorithm = args.sweep_algorithm or 'bayesian'
  args.max_trial_count = 10 if args.max_trial_count is None else args.max_trial_count
  args.parallel_trial_count = (2 if args.parallel_trial_count is None
                               else args.parallel_trial_count)
  _require(args.sweep_metric, 'sweep_metric', _METRIC, 'a metric id such as episode_return')
  _at_least(args.max_trial_count, 'max_trial_count', 1, 'trials in the study')
  _at_least(args.parallel_trial_count, 'parallel_trial_count', 1, 'trials at once')
  if args.parallel_trial_count > args.max_trial_count:
    raise BadInput(f'--parallel_trial_count={args.parallel_trial_count} exceeds '
                   f'--max_trial_count={args.max_trial_count}')
  if not learner_settings.get('max_env_frames') and learner_settings.get('target_return') is None:
    raise BadInput('a sweep needs each trial to end: set --max_env_frames=N (N > 0) or '
                   '--target_return')
  taken = set(settings.ABSL_FLAGS) | (set(known.job) if known else set())
  parameters = []
  for text in args.sweep_parameter:
    try:
      parameter = vertex_spec.parse_sweep_parameter(text)
    except ValueError as e:
      raise BadInput(str(e)) from None
    if parameter.parameter_id in taken:
      raise BadInput(f'--sweep_parameter={text}: the id {parameter.parameter_id!r} is a flag '
                     'of seed-job or absl, which would take the value; pick another id')
    if any(p.parameter_id == parameter.parameter_id for p in parameters):
      raise BadInput(f'--sweep_parameter={text}: the id {parameter.parameter_id!r} is used '
                     'twice')
    if args.sweep_algorithm == 'grid' and 'doubleValueSpec' in parameter.spec:
      raise BadInput(f'--sweep_parameter={text}: grid search takes int, discrete and '
                     'categorical parameters, not double ranges')
    settings.check_binding(parameter.binding, f'--sweep_parameter={text}', agent_class,
                           configurables, agent_configs)
    parameters.append(parameter)
  return parameters


def submit(submission: Submission, gcloud_flags: List[str], dry_run: bool) -> int:
  """Runs gcloud ai GROUP create with the spec as --config; its exit status."""
  command = ['gcloud', 'ai', submission.group, 'create', *submission.flags]
  text = vertex_spec.to_config_text(submission.spec)
  if dry_run:
    print(text)
    shown = shlex.join(command + ['--config=SPEC.yaml', *gcloud_flags])
    print(f'dry run: nothing submitted. With the spec above saved as SPEC.yaml, this '
          f'submits it:\n  {shown}', file=sys.stderr)
    return 0
  if shutil.which('gcloud') is None:
    raise BadInput('gcloud is not on PATH: install the Google Cloud CLI '
                   '(https://cloud.google.com/sdk/docs/install), or use --dry_run')
  handle, path = tempfile.mkstemp(prefix='seed-vertex-', suffix='.yaml')
  try:
    with os.fdopen(handle, 'w') as f:
      f.write(text)
    return subprocess.run(command + [f'--config={path}', *gcloud_flags], check=False).returncode
  finally:
    os.remove(path)


def main(argv: List[str]) -> int:
  args, extras = parse_args(argv)
  try:
    submission = build(args, extras)
    status = submit(submission, args.gcloud_flag, args.dry_run)
  except BadInput as e:
    print(f'submit.py: {e}; nothing submitted', file=sys.stderr)
    return 2
  if status == 0 and not args.dry_run:
    if submission.group == 'custom-jobs':
      print(f'run directory: {submission.run_dir} (to resume this run, submit again with '
            f'--run_name={submission.run_name})', file=sys.stderr)
    else:
      print(f'trial run directories: {submission.run_dir}/TRIAL_ID', file=sys.stderr)
  return status


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))

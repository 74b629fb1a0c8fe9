"""Every option of the learner, the actor and seed-job, declared once: name, kind,
default, help and check.

From these tables come the absl flags (`seed.process.flag_env.define`), their SEED_<NAME>
variables (`variable_name`), the checks a start runs before anything else (`check`), the
values handed to a launch (`values_class`), the flag tables of docs/usage.md (`python -m
seed.settings --readme docs/usage.md` writes them, a test compares), and the flag checks of
`gcp/submit.py` and `slurm/submit.sh` (`python -m seed.settings --list learner`).
Standard library only: gcp/submit.py and slurm/submit.sh read it without absl, gin or
TensorFlow.
"""
import argparse
import dataclasses
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

PREFIX = 'SEED_'
# absl's DEFINE_<kind> for each kind.
KINDS = ('string', 'integer', 'float', 'bool', 'enum', 'multi_string')
_PYTHON_TYPES = {'string': Optional[str], 'integer': int, 'float': float, 'bool': bool,
                 'enum': str, 'multi_string': Sequence[str]}


@dataclasses.dataclass(frozen=True)
class Check:
  """What a value must satisfy: `accepts(value)`, and `expected` saying so in words."""
  accepts: Callable[[Any], bool]
  expected: str


@dataclasses.dataclass(frozen=True)
class Setting:
  """One option. `required` names what it is when a start cannot go on without it."""
  name: str
  kind: str
  default: Any
  help: str
  choices: Tuple[str, ...] = ()
  check: Optional[Check] = None
  required: str = ''

  def __post_init__(self):
    if self.kind not in KINDS:
      raise ValueError(f'setting {self.name}: kind {self.kind!r}; expected one of {KINDS}')
    if (self.kind == 'enum') != bool(self.choices):
      raise ValueError(f'setting {self.name}: choices go with kind enum, and only there')


# --event_loop of the learner and the actor (seed/process/event_loop.py runs them; the first is
# the default).
EVENT_LOOPS = ('uvloop', 'asyncio')

# --learner_devices: '' or 'GPU:0,GPU:1' and the like.
_DEVICE_LIST = re.compile(r'((CPU|GPU|TPU):\d+(,(CPU|GPU|TPU):\d+)*)?')

# --cpu_cores of the learner and the actor (seed/process/cpu_affinity.py applies it).
CORE_LIST = re.compile(r'\d+(-\d+)?(,\d+(-\d+)?)*')
CORE_LIST_EXPECTED = 'core ids and ranges, e.g. 1 or 0-3,6 (empty: any core)'
_CORES_CHECK = Check(lambda value: not value or CORE_LIST.fullmatch(value) is not None,
                     CORE_LIST_EXPECTED)


def at_least(low, unit: str = '') -> Check:
  return Check(lambda value: value >= low, f'{unit or "a number"} >= {low}')


def above(low, unit: str = '') -> Check:
  return Check(lambda value: value > low, f'{unit or "a number"} > {low}')


def between(low, high, expected: str) -> Check:
  return Check(lambda value: low <= value <= high, expected)


def one_of(*accepted: str) -> Check:
  return Check(lambda value: value in accepted, f'one of {", ".join(accepted)}')


def _process_settings(process: str) -> Tuple[Setting, ...]:
  """--cpu_cores and --event_loop, which the learner and the actor take alike."""
  return (
      Setting('cpu_cores', 'string', '',
          f'Keep the {process} on these cores, e.g. 1 or 2-7 (empty: any). Where learner '
          'and actors share a few cores, cores of their own spare their threads the '
          'wake-ups across cores (docs/performance.md).',
          check=_CORES_CHECK),
      Setting('event_loop', 'enum', 'uvloop',
          f"The {process}'s event loop: uvloop (libuv; less CPU per actor message, "
          "asyncio's own where uvloop is not installed) or asyncio.",
          choices=EVENT_LOOPS),
  )


def variable_name(name: str) -> str:
  """The environment variable that sets --name's default: SEED_NAME."""
  return PREFIX + name.upper()


LEARNER = (
    Setting('logdir', 'string', None,
        'Run directory: checkpoints, summaries, logs. Training resumes from the '
        'checkpoint found here.',
        required='the run directory'),
    Setting('summary_dir', 'string', None,
        'TensorBoard summaries go here (default: --logdir).'),
    Setting('hypertune_metric', 'string', None,
        'Report the mean episode return under this metric id to a Vertex AI '
        'hyperparameter tuning job (cloudml-hypertune), each progress interval.'),
    Setting('agent', 'string', 'vtrace',
        'Agent name: one an agent folder registers (seed/agents/<folder>/__init__.py; '
        'the README lists them).'),
    Setting('env', 'string', None,
        'Environment name (e.g. Catch, atari:Pong); binds EnvConfig.name over the gin'
        ' files and bindings.'),
    Setting('gin_file', 'multi_string', (),
        'Gin config files.'),
    Setting('gin_bindings', 'multi_string', (),
        'Gin bindings, applied after the files.'),
    Setting('server_address', 'string', 'localhost:8686',
        'host:port to listen on. Stays on localhost unless told otherwise; listen on '
        'other interfaces only with --tls_cert_file and --auth_token_file.'),
    Setting('local_socket', 'string', '',
        'Also serve actors of this host on this Unix socket (absolute path; actors '
        'connect with --server_address=unix:PATH): the same messages without gRPC, '
        'for a fraction of the learner\'s CPU per step. No TLS (the socket file is '
        'this user\'s only); the auth token is still checked. Empty: gRPC only.'),
    Setting('health_port', 'integer', 0,
        'Also serve the gRPC health service (grpc.health.v1, and nothing else) in '
        'plaintext on this port of the --server_address host, for Kubernetes probes '
        '(0: only on the main port).',
        check=between(0, 65535, 'a port 1-65535, or 0 for none')),
    Setting('inference_batch_size', 'integer', 64,
        'Most envs in one inference batch.',
        check=at_least(1, 'envs')),
    Setting('max_wait_ms', 'float', 5.0,
        'Run a partial batch after waiting this long.',
        check=at_least(0, 'milliseconds')),
    *_process_settings('learner'),
    Setting('checkpoint_interval_s', 'float', 300.0,
        'Seconds between checkpoints.',
        check=above(0, 'seconds')),
    Setting('progress_interval_s', 'float', 5.0,
        'Seconds between progress lines/summaries.',
        check=above(0, 'seconds')),
    Setting('max_env_frames', 'integer', 0,
        'Stop after this many env frames (0: never).',
        check=at_least(0, 'frames (0: never)')),
    Setting('target_return', 'float', None,
        'Stop once the mean return of the last --return_window episodes reaches this.'),
    Setting('shutdown_limit_s', 'float', 20.0,
        'Longest a stopping learner may take for its last checkpoint and closing; '
        'then it exits anyway, with the code it would have had if that checkpoint was '
        'written (0 at its goal, else --stopped_exit_code), else 1. Spot VMs '
        "give 30 s after SIGTERM; give less than the platform's grace period "
        '(Kubernetes: terminationGracePeriodSeconds).',
        check=above(0, 'seconds')),
    Setting('finished_notice_s', 'float', 60.0,
        'Started on a run whose finished.json already meets its goal (a Kubernetes pod or '
        'Slurm job started again), the learner trains nothing: it answers actors that the '
        'run is over for this long (they exit 0 instead of retrying), then exits 0. '
        'TensorFlow is not loaded. 0: exit at once.',
        check=at_least(0, 'seconds')),
    Setting('run_lock_stale_s', 'float', 120.0,
        "A run directory's lock (learner.lock) whose heartbeat is older than this is "
        'taken over; a fresher one held by a learner of another job or host is waited'
        ' for this long, then refused.',
        check=above(0, 'seconds')),
    Setting('stopped_exit_code', 'integer', 0,
        'Exit code of a learner that a signal stopped before its --max_env_frames or '
        "--target_return, once its checkpoint is written. 0 suits a laptop's Ctrl-C; "
        'a Kubernetes Job sets 75, so a preempted learner is started again, not '
        'counted done.',
        check=between(0, 255, '0-255')),
    Setting('return_window', 'integer', 20,
        'Episodes in the reported mean return.',
        check=at_least(1, 'episodes')),
    Setting('max_message_mb', 'integer', 16,
        'Largest message accepted from an actor.',
        check=at_least(1, 'MB')),
    Setting('max_envs_per_actor', 'integer', 0,
        'Most envs one actor stream may step, at most --inference_batch_size (0: that, '
        'the most one batch holds).',
        check=at_least(0, 'envs (0: --inference_batch_size)')),
    Setting('max_actor_streams', 'integer', 1024,
        'Most actor streams open at once; one more is refused with UNAVAILABLE, and '
        'its actor retries (with backoff) until a place is free.',
        check=at_least(1, 'streams')),
    Setting('hello_timeout_s', 'float', 30.0,
        'End a stream that sends no hello this long after opening.',
        check=above(0, 'seconds')),
    Setting('stream_idle_timeout_s', 'float', 600.0,
        'End an actor stream that sends no step this long after its last actions (a '
        "hung actor frees its envs' state).",
        check=above(0, 'seconds')),
    Setting('max_abs_input', 'float', 1000000000.0,
        'Refuse a step whose rewards or float observations exceed this magnitude '
        '(they would overflow the loss).',
        check=above(0, 'a magnitude')),
    Setting('max_nonfinite_steps', 'integer', 100,
        'Stop (without a checkpoint, so the last one keeps good parameters) after '
        'this many train steps in a row whose loss or gradients were NaN/Inf; each '
        'such step changes nothing.',
        check=at_least(1, 'train steps')),
    Setting('anneal_learning_rate', 'bool', False,
        "Lower every optimizer's step size linearly from the configured one to 0 at "
        "--max_env_frames (IMPALA and SEED do, as cleanrl's anneal_lr); needs "
        '--max_env_frames.'),
    Setting('lockstep', 'bool', False,
        'Act and train in lockstep (every agent): each unroll waits until every batch'
        ' it made ready (queued, or allowed by the replay ratio) is trained, so every '
        'step after it acts with the new parameters. With --seed and one actor '
        '(--num_splits=1) a run repeats exactly; slower.'),
    Setting('eval_interval_s', 'float', 0.0,
        'Evaluate a checkpoint this often while training (0: never): after a '
        'checkpoint, python -m seed.evaluate plays --eval_episodes greedy episodes in'
        ' a child process and logs them to TensorBoard (RUN/evaluation/tb); '
        'evaluations follow checkpoints, so set --checkpoint_interval_s no longer '
        'than this.',
        check=at_least(0, 'seconds (0: no evaluation)')),
    Setting('eval_episodes', 'integer', 5,
        'Episodes each periodic evaluation plays.',
        check=at_least(1, 'episodes')),
    Setting('eval_video', 'bool', False,
        'Periodic evaluations also record the first episode: '
        'RUN/evaluation/ckpt-N.mp4 and a GIF in TensorBoard.'),
    Setting('log_train_steps', 'bool', False,
        "Write every train step's losses and statistics to train_steps.csv in the run"
        ' directory.'),
    Setting('seed', 'integer', 0,
        'Seed of the agent (binds <AgentConfig>.seed: network init, action sampling, '
        'exploration), its replay sampling and the env probe. Give actors the same '
        '--seed for a reproducible run.',
        check=at_least(0, 'an int')),
    Setting('num_seeds', 'integer', 1,
        'Independent agents trained together in this learner (seeds --seed, --seed + '
        '1, ...): one network with a seed axis, one update for all, a replay each; '
        'env k feeds seed k mod num_seeds. SAC, DDPG and their SR- variants.',
        check=at_least(1, 'an int')),
    Setting('tf_intra_op_threads', 'integer', 0,
        'Threads inside one TensorFlow op (0: the CPUs this process may use where its '
        "container's CPU limit or --cpu_cores leaves fewer than the machine's cores, else "
        'TensorFlow picks, one per core).',
        check=at_least(0, 'threads (0: TensorFlow picks)')),
    Setting('tf_inter_op_threads', 'integer', 0,
        'Ops TensorFlow runs at once (0: as --tf_intra_op_threads).',
        check=at_least(0, 'threads (0: TensorFlow picks)')),
    Setting('learner_devices', 'string', '',
        'Devices the train step runs on data-parallel, comma-separated, e.g. GPU:0,GPU:1:'
        ' each trains on its share of the batch, the gradients are summed, one set of '
        'variables; inference runs on --inference_devices. Empty: one device, as TensorFlow '
        'places it. Naming more CPU devices than there are splits the CPU into logical '
        'devices (tests, or measuring the overhead). Agents that cannot train on several '
        'devices refuse it and say why.',
        check=Check(lambda value: _DEVICE_LIST.fullmatch(value) is not None,
                    'a comma-separated list of devices, each CPU:n, GPU:n or TPU:n, e.g. '
                    'GPU:0,GPU:1 (empty: one device)')),
    Setting('inference_devices', 'string', '',
        'Devices of --learner_devices that serve inference, comma-separated: one batch '
        'in flight on each, all reading the latest weights. Empty: the first learner '
        'device alone (one batch at a time, as with one device).',
        check=Check(lambda value: _DEVICE_LIST.fullmatch(value) is not None,
                    'a comma-separated list of devices among --learner_devices, e.g. '
                    'GPU:0,GPU:1 (empty: the first learner device)')),
    Setting('train', 'bool', True,
        'Train. --notrain serves inference only and drops the unrolls (to measure the'
        ' inference loop).'),
    Setting('checkpoint_replay', 'bool', True,
        'Save replay contents with each checkpoint, so a resumed run keeps them '
        '(replay agents; the file can be GBs).'),
    Setting('init_checkpoint', 'string', None,
        'Start a new run from this checkpoint (a prefix like RUN/ckpt/ckpt-7, or a '
        'run directory: its latest): model, optimizer and agent state. Ignored when '
        '--logdir has a checkpoint of its own.'),
    Setting('init_counters', 'string', 'restart',
        'With --init_checkpoint: restart (env frames and learner steps from 0) or '
        "continue (from the checkpoint's).",
        check=one_of('restart', 'continue')),
    Setting('replay_parameters', 'string', None,
        'Replay mixture of a queue-fed agent (vtrace, ppo) as JSON, over '
        'ReplayMixtureConfig.replays: a list of replays with kind (queue, uniform, '
        'prioritized, elite, attentive), capacity and sample_ratio, e.g. \'[{"kind": '
        '"queue", "capacity": 1, "sample_ratio": 0.5}, {"kind": "uniform", '
        '"capacity": 10000, "sample_ratio": 0.5}]\'.'),
    Setting('tls_cert_file', 'string', None,
        'PEM certificate: serve over TLS.'),
    Setting('tls_key_file', 'string', None,
        'PEM private key for --tls_cert_file.'),
    Setting('auth_token_file', 'string', None,
        'File with a shared token actors must present (or put the token itself in '
        'SEED_AUTH_TOKEN).'),
)

ACTOR = (
    Setting('server_address', 'string', 'localhost:8686',
        'Learner host:port (gRPC), or unix:PATH for a learner of this host serving '
        '--local_socket=PATH.',
        required="the learner's host:port"),
    Setting('actor_id', 'integer', 0,
        "Unique id of this actor process (>= 0; on Kubernetes the actors Job's "
        'completion index).',
        check=Check(lambda value: value >= 0,
                    'an integer >= 0, unique among the actors of this learner')),
    Setting('env', 'string', None,
        'Environment name (e.g. Catch, atari:Pong); binds EnvConfig.name over the gin'
        ' files and bindings.'),
    Setting('num_envs', 'integer', 4,
        'Envs stepped by this process (k).',
        check=at_least(1, 'envs')),
    Setting('num_splits', 'integer', 1,
        'Groups the k envs are split into (at most k), one stream each: the actor '
        'steps one group while another waits for actions.',
        check=at_least(1, 'groups')),
    Setting('gin_file', 'multi_string', (),
        'Gin config files (only env bindings apply here).'),
    Setting('gin_bindings', 'multi_string', (),
        'Gin bindings.'),
    Setting('eval', 'bool', False,
        'Evaluation actor: its envs act with the evaluation policy, are not trained '
        'on, and log eval/episode_return.'),
    Setting('seed', 'integer', 0,
        'Base seed; env i of actor a uses seed + 1000·a + i.',
        check=at_least(0, 'an int')),
    Setting('max_steps', 'integer', 0,
        'Stop after this many steps of all k envs (0: never).',
        check=at_least(0, 'steps (0: never)')),
    Setting('stats_file', 'string', None,
        'Write steps and round-trip latency percentiles here (JSON) on exit.'),
    Setting('learner_lost_limit_s', 'float', 3600.0,
        'Exit (code 3, with a message) after this long without a learner: none reachable, '
        'retrying, since the last message from one (or since the start). It outlasts a '
        "learner's restart (a new pod, a requeued job, a checkpoint restore); an actor "
        'whose learner is gone for good then stops holding its CPUs. 0: retry for ever.',
        check=at_least(0, 'seconds (0: retry for ever)')),
    Setting('heartbeat_file', 'string', None,
        'Touch this file every 10 s while the actor runs (stepping, or retrying a '
        'learner it lost); older than a minute, the actor hangs (an env step that '
        "never returns): a liveness probe's signal."),
    *_process_settings('actor'),
    Setting('tls_ca_file', 'string', None,
        'PEM CA certificate: connect over TLS.'),
    Setting('auth_token_file', 'string', None,
        "File with the learner's shared token (or put the token itself in "
        'SEED_AUTH_TOKEN).'),
)

JOB = (
    Setting('role', 'enum', 'auto',
        'This process: learner, actor, or auto (from '
        'CLUSTER_SPEC, else TF_CONFIG).',
        choices=('auto', 'learner', 'actor')),
    Setting('actor_id', 'integer', None,
        "With --role=actor: this actor's id (>= 0, unique)."),
    Setting('learner_address', 'string', None,
        "With an explicit --role: the learner's HOST:PORT (it listens on PORT; actors"
        ' dial HOST:PORT).'),
    Setting('listen_host', 'string', None,
        "Where the learner listens (default: the learner's host when that is "
        'loopback, else 0.0.0.0: all interfaces, with TLS).'),
    Setting('run_dir', 'string', None,
        "The learner's run directory, shared by all replicas (gs://BUCKET/PATH means "
        "/gcs/BUCKET/PATH). Default on Vertex AI: the job's base output directory "
        '(from AIP_CHECKPOINT_DIR).'),
    Setting('summary_dir', 'string', None,
        'TensorBoard summaries (default on Vertex AI: AIP_TENSORBOARD_LOG_DIR; else '
        'the run directory).'),
    Setting('tls', 'enum', 'auto',
        'TLS and a shared token between learner and actors; '
        'auto: unless the learner is on localhost.',
        choices=('auto', 'always', 'never')),
    Setting('job_id', 'string', None,
        "Names this job's TLS folder under RUN_DIR/tls (default: CLOUD_ML_JOB_ID on "
        'Vertex AI, slurm-$SLURM_JOB_ID on Slurm).'),
    Setting('bootstrap_timeout_s', 'float', 3600.0,
        "How long an actor waits for the learner's TLS files (a GPU machine and its "
        'image can take many minutes to start; a timeout costs the actor replica a '
        'restart).',
        check=above(0, 'seconds')),
    Setting('sweep_binding', 'multi_string', (),
        'NAME=Configurable.parameter: an argument --NAME=VALUE becomes the gin '
        'binding Configurable.parameter=VALUE.'),
    Setting('actors_per_replica', 'integer', 1,
        'Actor processes this replica runs (about one core each); replica i runs '
        'actors i*N .. i*N+N-1.',
        check=at_least(1, 'an integer')),
    Setting('print_command', 'bool', False,
        'Print the role and the command, run nothing.'),
)


SCHEMAS = {'learner': LEARNER, 'actor': ACTOR, 'job': JOB}


def device_names(text: str) -> List[str]:
  """--learner_devices or --inference_devices as names: 'GPU:0,GPU:1' -> ['GPU:0', 'GPU:1']."""
  return [name.strip() for name in text.split(',') if name.strip()]


def learner_gpus_refusal(learner_devices: str, gpus: int, gpus_flag: str) -> Optional[str]:
  """Why --learner_devices does not fit a learner given `gpus` GPUs (numbered from GPU:0)
  by the submitter's `gpus_flag`, or None: it names a GPU the learner lacks, or leaves
  all but one of several idle (the learner trains on one device unless told). gcp/submit.py
  and slurm/submit.sh ask this before a job is submitted."""
  named = [int(name.split(':')[1]) for name in device_names(learner_devices)
           if name.startswith('GPU:')]
  missing = [f'GPU:{index}' for index in named if index >= gpus]
  if missing:
    return (f'--learner_devices={learner_devices} names {", ".join(missing)}; the learner has '
            f'{gpus} GPU(s) ({gpus_flag}={gpus}), numbered from GPU:0')
  if gpus > 1 and not named:
    every = ','.join(f'GPU:{index}' for index in range(gpus))
    return (f'{gpus_flag}={gpus}: the learner uses more than one GPU only when told, with '
            f'--learner_devices={every} (V-trace, R2D2, SAC and DDPG train on several '
            f'devices); or ask for {gpus_flag}=1')
  return None


def by_name(schema: Sequence[Setting]) -> Dict[str, Setting]:
  return {setting.name: setting for setting in schema}


def values_class(class_name: str, schema: Sequence[Setting],
                 extra: Sequence[Tuple[str, Any, Any]] = ()) -> type:
  """A frozen dataclass with one field per setting, named as the flags are and with
  their defaults, then the `extra` (name, type, default) fields."""
  fields = [(s.name, _PYTHON_TYPES[s.kind], dataclasses.field(default=s.default))
            for s in schema]
  fields += [(name, kind, dataclasses.field(default=default)) for name, kind, default in extra]
  return dataclasses.make_dataclass(class_name, fields, frozen=True)


def _shown(value: Any) -> str:
  return repr(value) if isinstance(value, str) else str(value)


def refusal(setting: Setting, value: Any, written: Optional[str] = None) -> Optional[str]:
  """Why `value` is refused for `setting` (missing though required, not among its
  choices, refused by its check), or None. `written`: the value as the user typed it,
  for the message (default: the parsed value)."""
  if setting.required and value in (None, ''):
    return (f'{setting.required} is not set: pass --{setting.name} or set '
            f'{variable_name(setting.name)}')
  shown = _shown(value) if written is None else written
  if setting.choices and value not in setting.choices:
    return f'--{setting.name}={shown}; expected one of {", ".join(setting.choices)}'
  if setting.check is not None and value is not None and not setting.check.accepts(value):
    return f'--{setting.name}={shown}; expected {setting.check.expected}'
  return None


def check(schema: Sequence[Setting], values: Any) -> None:
  """Raises ValueError for the first setting of `values` (attributes named as the
  settings) that `refusal` refuses."""
  for setting in schema:
    problem = refusal(setting, getattr(values, setting.name))
    if problem:
      raise ValueError(problem)


def _default_text(setting: Setting) -> str:
  if setting.required:
    return '(required)'
  if setting.kind == 'bool':
    return 'on' if setting.default else 'off'
  if setting.default in (None, (), ''):
    return ''
  if isinstance(setting.default, float):
    return f'{setting.default:g}'
  return f'`{setting.default}`' if isinstance(setting.default, str) else str(setting.default)


def markdown_table(schema: Sequence[Setting]) -> str:
  """The docs' table of `schema` (docs/usage.md): flag, default, what it does."""
  rows = ['| flag | default | meaning |', '|---|---|---|']
  for s in schema:
    flag = f'`--{s.name}`'
    meaning = s.help.replace('|', '\\|')
    if s.choices:
      meaning += f' One of: {", ".join(s.choices)}.'
    rows.append(f'| {flag} | {_default_text(s)} | {meaning} |')
  return '\n'.join(rows)


def _readme_block(name: str) -> re.Pattern:
  return re.compile(rf'(<!-- settings:{name} -->\n)(.*?)(<!-- /settings:{name} -->)', re.S)


def readme_with_tables(text: str) -> str:
  """`text` with each `<!-- settings:NAME -->` block replaced by NAME's table."""
  for name, schema in SCHEMAS.items():
    text = _readme_block(name).sub(
        lambda match, schema=schema: (match.group(1) + markdown_table(schema) + '\n' +
                                      match.group(3)),
        text)
  return text


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      prog='python -m seed.settings',
      description='The learner\'s, actor\'s and seed-job\'s settings, from one table each.')
  parser.add_argument('--list', choices=sorted(SCHEMAS), action='append', default=[],
                      help='print NAME KIND, one setting a line (repeatable)')
  parser.add_argument('--readme', metavar='FILE',
                      help='rewrite the settings tables between <!-- settings:NAME --> markers')
  parser.add_argument('--learner_gpus', type=int, metavar='N',
                      help='with --learner_devices: print why those devices do not fit a '
                      'learner of N GPUs and exit 2 (exit 0 when they fit)')
  parser.add_argument('--learner_devices', default='')
  parser.add_argument('--gpus_flag', default='--learner_gpus',
                      help="the submitter's flag that gives the learner its GPUs")
  args = parser.parse_args(argv)
  if args.learner_gpus is not None:
    problem = learner_gpus_refusal(args.learner_devices, args.learner_gpus, args.gpus_flag)
    if problem:
      print(problem)
      return 2
    return 0
  for name in args.list:
    for setting in SCHEMAS[name]:
      print(setting.name, setting.kind)
  if args.readme:
    with open(args.readme, encoding='utf-8') as f:
      text = f.read()
    with open(args.readme, 'w', encoding='utf-8') as f:
      f.write(readme_with_tables(text))
  if not args.list and not args.readme:
    parser.print_help()
  return 0


if __name__ == '__main__':
  sys.exit(main())

"""Where an experiment's settings come from, and which source wins.

Four layers, each a `Layer` (what it leaves None or empty it says nothing about):

  defaults       the learner's flag defaults, the runner's (1 actor, 4 envs, agent
                 vtrace), and the values in the experiment's gin files
  saved          the run directory's saved config, when it has one (a resumed run):
                 operative_config.gin and the experiment flags in flags.txt
  overrides      what the runner sets for this experiment: its grid point, seed, and
                 its entry in an experiments file
  command_line   settings given on the runner's command line, for every experiment

`resolve` merges them, later layers winning, setting by setting: a scalar (agent,
seed, actors, envs) and each learner flag from the last layer that gives it; gin as
files then bindings, in layer order, since gin applies later values over earlier ones:
the gin files (which layer names them does not change that their values are
defaults), then the saved operative_config.gin, then the overrides' bindings, then
the command line's. TensorFlow-free.
"""
import dataclasses
import os
from typing import Dict, Mapping, Optional, Tuple

from seed import agents, config, settings
from seed.run_dir.layout import RunDir

LAYER_NAMES = ('defaults', 'saved', 'overrides', 'command_line')

# Learner flags an experiment may set. The runner sets the rest itself (where the
# learner listens and logs, its gin, agent and seed) or leaves them to the learner's
# process (TLS, health port, TensorBoard elsewhere): those are not carried either.
_NOT_EXPERIMENT_FLAGS = frozenset({
    'logdir', 'summary_dir', 'hypertune_metric', 'server_address', 'health_port',
    'tls_cert_file', 'tls_key_file', 'auth_token_file', 'gin_file', 'gin_bindings', 'agent',
    'seed'})


def experiment_flags() -> Tuple[str, ...]:
  """The learner flags a layer may set, sorted."""
  return tuple(sorted({s.name for s in settings.LEARNER} - _NOT_EXPERIMENT_FLAGS))


def bool_flags() -> Tuple[str, ...]:
  return tuple(sorted(s.name for s in settings.LEARNER if s.kind == 'bool'))


@dataclasses.dataclass(frozen=True)
class Layer:
  """The settings one source gives.

  agent: agent name. gin_files: gin files, in order. gin_bindings: bindings, in order.
  learner_flags: {flag name: value as on a command line}, e.g. {'max_env_frames': '20000'}.
  seed: the learner's --seed, the actors' --seed and the agent config's seed.
  num_actors, num_envs: actor processes and envs each.
  """
  agent: Optional[str] = None
  gin_files: Tuple[str, ...] = ()
  gin_bindings: Tuple[str, ...] = ()
  learner_flags: Mapping[str, str] = dataclasses.field(default_factory=dict)
  seed: Optional[int] = None
  num_actors: Optional[int] = None
  num_envs: Optional[int] = None

  def __post_init__(self):
    if self.agent is not None and self.agent not in agents.AGENTS:
      raise ValueError(f'unknown agent {self.agent!r}; known agents: '
                       f'{", ".join(sorted(agents.AGENTS))}')
    unknown = sorted(set(self.learner_flags) - set(experiment_flags()))
    if unknown:
      raise ValueError(f'unknown or runner-set learner flag --{unknown[0]}; an experiment may '
                       f'set {", ".join(experiment_flags())} (and --agent, --seeds, --gin_file, '
                       '--gin_bindings through their own options)')
    for name in ('seed', 'num_actors', 'num_envs'):
      value = getattr(self, name)
      least = 0 if name == 'seed' else 1
      if value is not None and (not isinstance(value, int) or value < least):
        raise ValueError(f'{name}={value!r}; expected an integer >= {least}')


DEFAULTS = Layer(agent='vtrace', seed=0, num_actors=1, num_envs=4)


def saved_layer(run_dir: str) -> Layer:
  """The run directory's saved config: operative_config.gin and flags.txt (empty if none)."""
  gin_path = RunDir(run_dir).operative_config
  saved = config.read_saved_flags(run_dir, bool_names=bool_flags())
  wanted = set(experiment_flags())
  return Layer(
      agent=saved.get('agent', [None])[-1],
      gin_files=(gin_path,) if os.path.exists(gin_path) else (),
      learner_flags={name: values[-1] for name, values in saved.items() if name in wanted},
      seed=int(saved['seed'][-1]) if 'seed' in saved else None)


@dataclasses.dataclass(frozen=True)
class Resolved:
  """One experiment's settings after `resolve`, and the layer each came from."""
  agent: str
  gin_files: Tuple[str, ...]
  gin_bindings: Tuple[str, ...]
  learner_flags: Dict[str, str]
  seed: int
  num_actors: int
  num_envs: int
  sources: Dict[str, str]  # 'agent', 'seed', ..., 'flag:<name>', 'gin_files' -> layer name

  @property
  def max_env_frames(self) -> int:
    return int(float(self.learner_flags.get('max_env_frames', 0)))

  def learner_args(self) -> list:
    """The learner's flags, but for --logdir, --agent and --server_address."""
    return ([f'--seed={self.seed}'] +
            [f'--{name}={value}' for name, value in sorted(self.learner_flags.items())] +
            self._gin_args())

  def actor_args(self) -> list:
    """Every actor's flags, but for --actor_id, --num_envs and --server_address."""
    env = [f'--env={self.learner_flags["env"]}'] if 'env' in self.learner_flags else []
    return [f'--seed={self.seed}'] + env + self._gin_args()

  def _gin_args(self) -> list:
    return ([f'--gin_file={path}' for path in self.gin_files] +
            [f'--gin_bindings={binding}' for binding in self.gin_bindings])


def resolve(defaults: Layer, saved: Layer, overrides: Layer, command_line: Layer) -> Resolved:
  """Merges the layers: command line > overrides > saved > defaults (see the module doc)."""
  layers = dict(zip(LAYER_NAMES, (defaults, saved, overrides, command_line)))
  sources = {}
  scalars = {}
  for name in ('agent', 'seed', 'num_actors', 'num_envs'):
    for layer_name, layer in layers.items():
      if getattr(layer, name) is not None:
        scalars[name], sources[name] = getattr(layer, name), layer_name
  flags = {}
  for layer_name, layer in layers.items():
    for name, value in layer.learner_flags.items():
      flags[name], sources[f'flag:{name}'] = str(value), layer_name
  base_files = ()
  for layer_name in ('defaults', 'overrides', 'command_line'):
    if layers[layer_name].gin_files:
      base_files, sources['gin_files'] = layers[layer_name].gin_files, layer_name
  bindings = list(defaults.gin_bindings + saved.gin_bindings + overrides.gin_bindings)
  if sources['seed'] in ('overrides', 'command_line'):
    # After the overrides' bindings: a grid point's own seed binding loses to --seeds.
    bindings.append(f'{agents.CONFIG_CLASSES[scalars["agent"]]}.seed = {scalars["seed"]}')
  bindings += command_line.gin_bindings
  return Resolved(agent=scalars['agent'], gin_files=tuple(base_files) + saved.gin_files,
                  gin_bindings=tuple(bindings), learner_flags=flags, seed=scalars['seed'],
                  num_actors=scalars['num_actors'], num_envs=scalars['num_envs'],
                  sources=sources)

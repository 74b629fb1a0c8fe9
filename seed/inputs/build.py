"""The agent input a learner trains from, built for its agent's InputKind."""
import threading
from typing import Optional

import gin

from seed import types
from seed.inputs import mixture_spec
from seed.inputs.fresh_then_replay import FreshThenReplay
from seed.inputs.lockstep import LockstepInput
from seed.inputs.mixture import ReplayMixture
from seed.inputs.prefetch import PrefetchingInput
from seed.inputs.protocol import AgentInput
from seed.inputs.replay_input import ReplayInput


def agent_input(agent, agent_name: str, stop_event: threading.Event, *, seed: int = 0,
                lockstep: bool = False,
                replay_parameters: Optional[str] = None) -> AgentInput:
  """The input `agent` (registered as `agent_name`) trains from.

  Args:
    agent: a seed.agents.common.base.Agent (its input_kind, batch_unrolls and what its kind
      asks: replay_schedule, samples_per_insert, mixture_kinds, features).
    agent_name: the agent's registered name, for errors.
    stop_event: set when the learner stops; every wait of the input ends with it.
    seed: seeds every replay's sampling.
    lockstep: act and train in lockstep (seed.inputs.lockstep).
    replay_parameters: a JSON replay mixture (--replay_parameters), for queue-fed agents.

  Raises:
    ValueError: a setting the agent's input kind does not take, or one it refuses.
  """
  kind = types.InputKind(agent.input_kind)
  if replay_parameters and kind != types.InputKind.FIFO:
    own = ('samples its own replay, set by ReplayInput.* gin bindings'
           if kind == types.InputKind.REPLAY else
           'replays on its own schedule, set by its config (replay_ratio, '
           'replay_capacity_unrolls, replay_start_unrolls)')
    raise ValueError(f'--replay_parameters is for the agents that train from a queue (vtrace, '
                     f'ppo); {agent_name} {own}')
  if kind == types.InputKind.REPLAY:
    built = ReplayInput(agent.batch_unrolls, stop_event, seed=seed, num_seeds=agent.num_seeds,
                        **_replay_ratio(agent))
    # Per seed: each seed's env steps count toward its warm-up and its resets.
    check_resets_after_warm_up(agent, built.limiter.min_size_to_sample // agent.num_seeds)
  elif kind == types.InputKind.FIFO:
    built = _replay_mixture(agent, agent_name, stop_event, seed, replay_parameters, lockstep)
  else:
    built = FreshThenReplay(agent.batch_unrolls, agent.replay_schedule, stop_event, seed=seed)
  if lockstep:
    built = LockstepInput(built, agent.batch_unrolls, stop_event)
  return built


def _replay_mixture(agent, agent_name: str, stop_event: threading.Event, seed: int,
                    replay_parameters: Optional[str], lockstep: bool) -> AgentInput:
  """The input of a queue-fed agent: the --replay_parameters mixture, else gin's."""
  config = mixture_spec.ReplayMixtureConfig()
  specs = (mixture_spec.parse_json(replay_parameters) if replay_parameters
           else mixture_spec.parse_specs(config.replays))
  if config.prefetch_batches and lockstep:
    # Batches drawn ahead by a thread of their own are drawn at a moment timing decides.
    raise ValueError(f'--lockstep draws each batch when the trainer asks; '
                     f'ReplayMixtureConfig.prefetch_batches = {config.prefetch_batches} draws '
                     'them ahead; accepted with --lockstep: 0')
  mixture = ReplayMixture(
      specs, agent.batch_unrolls, stop_event, seed=seed,
      samples_per_insert=config.samples_per_insert, min_fill_unrolls=config.min_fill_unrolls,
      features=agent.replay_features if agent.feature_output else None,
      feature_output=agent.feature_output, agent_name=agent_name,
      accepted_kinds=agent.mixture_kinds)
  if config.prefetch_batches:
    return PrefetchingInput(mixture, agent.batch_unrolls, config.prefetch_batches, stop_event)
  return mixture


def _replay_ratio(agent) -> dict:
  """The agent's own samples_per_insert, for agents that derive it (SAC: updates_per_step).

  A gin binding of ReplayInput.samples_per_insert would be silently overridden by
  the explicit argument, so it is refused instead.
  """
  samples_per_insert = agent.samples_per_insert
  if samples_per_insert is None:
    return {}
  try:
    bound = gin.query_parameter('ReplayInput.samples_per_insert')
  except ValueError:
    bound = None
  if bound is not None:
    raise ValueError(
        f'ReplayInput.samples_per_insert = {bound} is bound, but {type(agent).__name__} sets '
        f'it to updates_per_step * minibatch_transitions = {samples_per_insert:g}; remove the '
        'binding and set the agent\'s updates_per_step instead.')
  return {'samples_per_insert': samples_per_insert}


def check_resets_after_warm_up(agent, warm_up_steps: int) -> None:
  """Refuses resets more often than the uniform random steps before learning: an
  interval that short is a slip of units, and the agent would hardly learn between."""
  interval = agent.reset_interval_env_steps
  if interval is None or interval > warm_up_steps:
    return
  config = agent.config
  field = ('reset_interval_env_steps' if config.reset_interval_env_steps is not None
           else 'reset_interval_updates')
  raise ValueError(
      f'{type(config).__name__}.{field} = {getattr(config, field)} resets every {interval:g} '
      f'env steps (updates_per_step = {config.updates_per_step}), not more than the warm-up of '
      f'ReplayInput.min_fill_unrolls = {warm_up_steps} uniform random steps; accepted: an '
      f'interval of more than {warm_up_steps} env steps.')

"""The policy never retraces after warm-up, whatever the number of envs waiting."""
import numpy as np

from seed.agents.vtrace.agent import VTraceAgent
from seed.agents.vtrace.config import VTraceConfig
from seed.learner.counters import Counters
from seed.envs.spec import EnvSpec
from seed.inference.env_state import EnvTable
from seed.inference.step_processor import StepProcessor, StepRequest


def test_inference_traces_once_per_padded_size_and_never_after_warm_up():
  spec = EnvSpec((4,), 'float32', num_actions=2)
  agent = VTraceAgent(spec, VTraceConfig(use_lstm=True, lstm_size=8, mlp_hidden_sizes=(8,)))
  unrolls = []
  processor = StepProcessor(agent, max_batch_envs=12, frames_per_step=1,
                            put_unroll=unrolls.append, on_episode=lambda *a: None,
                            on_batch=lambda stats: None, counters=Counters())
  processor.warm_up()
  assert processor.batch_sizes == [1, 2, 4, 8, 12]
  traces_after_warm_up = agent.inference.experimental_get_tracing_count()
  assert traces_after_warm_up == len(processor.batch_sizes)

  table = EnvTable(agent.initial_core_state, agent.acting_params, agent.unroll_length)
  rng = np.random.default_rng(0)
  for num_envs in [1, 3, 5, 7, 12, 2, 11, 6, 9, 4]:
    slots = table.connect(actor_id=num_envs, run_id='r', num_envs=num_envs)
    table.disconnect(num_envs, 'r')
    request = StepRequest(slots, rng.normal(size=(num_envs, 4)).astype(np.float32),
                          np.ones(num_envs, np.float32), rng.random(num_envs) < 0.3,
                          np.zeros(num_envs, bool))
    (actions,) = processor([request])
    assert actions.shape == (num_envs,)
  assert agent.inference.experimental_get_tracing_count() == traces_after_warm_up

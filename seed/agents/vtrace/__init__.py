"""IMPALA / V-trace agent: `agent.VTraceAgent`, its `config.VTraceConfig`, networks and loss.

Import the submodules explicitly; this package must stay importable without
TensorFlow, like the rest of `seed` outside the learner.
"""

from seed.agents.registry import Registration

REGISTERED = (
    Registration('vtrace', 'seed.agents.vtrace.agent:VTraceAgent', 'VTraceConfig'),
)

"""What the learner trains from: one agent input per learner, behind seed.inputs.protocol's
AgentInput, built for the agent's seed.types.InputKind by seed.inputs.build.

  fifo               ReplayMixture (mixture.py): the queue alone, or a mixture of
                     replays (mixture_spec.py), optionally prefetched (prefetch.py)
  replay             ReplayInput (replay_input.py): prioritized sequence replay at a
                     sample-to-insert ratio (rate_limiter.py)
  fresh_then_replay  FreshThenReplay (fresh_then_replay.py): ACER's schedule

Any of them may be wrapped to act and train in lockstep (lockstep.py). Storage (the
FIFO, the prioritized replay, frames, files) is seed.replay's.
"""

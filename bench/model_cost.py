"""The model's own inference cost: one agent's batched policy, timed alone.

  python -m bench.model_cost --gin_file gin/atari/vtrace.gin --agent vtrace \
      --batch_sizes 1,2,4,8,16 --tf_intra_op_threads 1

Builds the agent as the learner does (gin, the env's spec, warm-up), then calls the
traced policy the learner calls (`agent.batched_policy(size)`) on zero inputs of each
batch size, `--calls` times after `--warmup_calls`, and prints one JSON line per size:
wall and CPU milliseconds per call (CPU counts every TensorFlow thread of the process).
bench.throughput uses it for its compute-aware ceiling.
"""
import argparse
import json
import sys
import time

from bench import hardware


# A stand-in for a GPU learner's policy: the agent's real inference path (the same
# inputs, outputs and TensorFlow call) with almost no arithmetic, one unit after the
# flattened observation and no LSTM. What a batch then costs is the call and the
# learner's Python around it, which a GPU does not make cheaper.
GPU_PROXY_BINDINGS = {
    'vtrace': ["VTraceConfig.torso = 'mlp'", 'VTraceConfig.mlp_hidden_sizes = (1,)',
               'VTraceConfig.use_lstm = False'],
}


def gpu_proxy_bindings(agent_name: str):
  """The gin bindings of GPU_PROXY_BINDINGS for `agent_name`; a clear error otherwise."""
  if agent_name not in GPU_PROXY_BINDINGS:
    raise ValueError(f'no GPU-proxy policy for agent {agent_name!r}; accepted: '
                     f'{", ".join(sorted(GPU_PROXY_BINDINGS))}')
  return list(GPU_PROXY_BINDINGS[agent_name])


def build_agent(gin_file: str, agent_name: str, batch_sizes, intra_op_threads: int,
                gin_bindings=()):
  """The agent as the learner builds it (gin, the env's spec), warmed up for `batch_sizes`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if intra_op_threads:
    tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
  from seed import agents, config  # pylint: disable=g-import-not-at-top
  from seed.envs import EnvConfig  # pylint: disable=g-import-not-at-top
  agents.register_gin_configurables(agent_name)
  config.parse_gin([gin_file], list(gin_bindings))
  agent = agents.agent_class(agent_name)(env_spec=EnvConfig().spec())
  agent.warm_up(list(batch_sizes))
  return agent


def measure(gin_file: str, agent_name: str, batch_sizes, intra_op_threads: int,
            calls: int, warmup_calls: int, gin_bindings=()):
  """[{'batch_size', 'wall_ms', 'cpu_ms'}] per batch size."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  agent = build_agent(gin_file, agent_name, batch_sizes, intra_op_threads, gin_bindings)
  rows = []
  for size in batch_sizes:
    policy = agent.batched_policy(size)
    inputs = agent._example_inputs(size)  # pylint: disable=protected-access
    for _ in range(warmup_calls):
      policy(*inputs)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
      out = policy(*inputs)
    tf.nest.map_structure(lambda t: t.numpy(), out)  # Wait for the last call's results.
    rows.append({'batch_size': size, 'wall_ms': 1000 * (time.perf_counter() - wall) / calls,
                 'cpu_ms': 1000 * (time.process_time() - cpu) / calls})
  return rows


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--gin_file', required=True)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--agent', default='vtrace')
  parser.add_argument('--batch_sizes', default='1,2,4,8,16,32,64')
  parser.add_argument('--tf_intra_op_threads', type=int, default=0)
  parser.add_argument('--calls', type=int, default=200)
  parser.add_argument('--warmup_calls', type=int, default=20)
  args = parser.parse_args(argv)
  sizes = [int(s) for s in args.batch_sizes.split(',')]
  for row in measure(args.gin_file, args.agent, sizes, args.tf_intra_op_threads, args.calls,
                     args.warmup_calls, args.gin_bindings):
    print(json.dumps({**row, 'cpu': hardware.describe()}), flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())

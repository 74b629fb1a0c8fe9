"""What a 1 x 1 round trip cannot go below on this machine: the transport and the
TensorFlow call, each measured alone.

  python -m bench.round_trip_floor --gin_file gin/atari/vtrace.gin --agent vtrace

- transport: a grpc.aio bidirectional stream between two processes on loopback, with
  the learner's and the actors' channel options; one request of `--request_bytes` (one
  Pong observation: 84 x 84 x 4 bytes) answered by 4 bytes, in lockstep, with no model
  (and the client's write alone, until gRPC has taken the message, and the server
  process's CPU per round trip: gRPC's and asyncio's work for one message each way);
  again with the reply made in a worker thread, as the learner's inference thread does.
- learner_python: what the learner's Python does for one actor's Step besides the policy
  call, in-process without gRPC, at each of `--batch_sizes` envs in the Step: parse and
  check the message (`protocol.decode_step`), the batch's bookkeeping in `StepProcessor`
  (inputs gathered and padded, recurrent state and unrolls filed, episodes counted:
  its time less the policy call's), and checking and encoding the actions.
- tf_call: one concrete function call with the agent's policy inputs at batch 1 (and
  `--batch_sizes`): a function that does nothing, called with numpy arrays (what the
  learner passes), with the same tensors every call (no conversion, inputs warm in
  cache: not what a learner can do) and with tensors copied from the arrays by
  tf.constant before each call; and the agent's batched policy with numpy arrays (it
  packs the per-env scalars into one array itself, so tensors would only be copied back).

Prints one JSON line per figure: {'figure', 'p50_ms', ...}.
"""
import argparse
import asyncio
import concurrent.futures
import json
import multiprocessing
import statistics
import sys
import time

from bench import cpu_time
from bench import hardware

REPLY = b'acts'


def _serve(port_queue, thread_hop: bool) -> None:
  import grpc  # pylint: disable=g-import-not-at-top
  from grpc import aio  # pylint: disable=g-import-not-at-top
  from seed.transport import security  # pylint: disable=g-import-not-at-top

  async def main():
    executor = concurrent.futures.ThreadPoolExecutor(1)

    async def act(request_iterator, context):
      del request_iterator
      while await context.read() is not aio.EOF:
        if thread_hop:
          await asyncio.get_running_loop().run_in_executor(executor, lambda: None)
        await context.write(REPLY)

    server = aio.server(options=security.server_options(64 << 20))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        'Floor', {'Act': grpc.stream_stream_rpc_method_handler(act)}),))
    port_queue.put(server.add_insecure_port('127.0.0.1:0'))
    await server.start()
    await server.wait_for_termination()

  asyncio.run(main())


async def _lockstep(port: int, request_bytes: int, seconds: float, warmup: int, read_cpu):
  """Round trips and writes (ms) after the first `warmup`, and read_cpu()'s values at
  the end of the warm-up and at the end (the server's CPU seconds)."""
  from grpc import aio  # pylint: disable=g-import-not-at-top
  from seed.transport import security  # pylint: disable=g-import-not-at-top
  async with aio.insecure_channel(f'127.0.0.1:{port}',
                                  options=security.channel_options(64 << 20)) as channel:
    call = channel.stream_stream('/Floor/Act')()
    request, round_trips, writes = b'\0' * request_bytes, [], []
    end = time.perf_counter() + seconds
    at_warm = None
    while time.perf_counter() < end:
      if len(round_trips) == warmup:
        at_warm = read_cpu()
      sent = time.perf_counter()
      await call.write(request)
      writes.append(1000 * (time.perf_counter() - sent))
      await call.read()
      round_trips.append(1000 * (time.perf_counter() - sent))
    at_end = read_cpu()
    await call.done_writing()
  return round_trips[warmup:], writes[warmup:], (at_warm, at_end)


def transport(request_bytes: int, seconds: float, thread_hop: bool) -> dict:
  """p50/p99 of the lockstep round trip (ms) against a server in another process."""
  context = multiprocessing.get_context('spawn')  # no gRPC state shared with the parent
  port_queue = context.Queue()
  server = context.Process(target=_serve, args=(port_queue, thread_hop), daemon=True)
  server.start()
  try:
    port = port_queue.get(timeout=60)
    round_trips, writes, (cpu_start, cpu_end) = asyncio.run(_lockstep(
        port, request_bytes, seconds, warmup=100, read_cpu=lambda: cpu_time.cpu_s(server.pid)))
  finally:
    server.terminate()
    server.join()
  return {'figure': 'grpc stream round trip' + (', reply from a worker thread'
                                                 if thread_hop else ''),
          'request_bytes': request_bytes, 'round_trips': len(round_trips),
          'p50_ms': statistics.median(round_trips),
          'p99_ms': statistics.quantiles(round_trips, n=100)[98],
          # The client's `await call.write(...)` alone: until gRPC has taken the message.
          'write_p50_ms': statistics.median(writes),
          # /proc counts in clock ticks (10 ms): seconds of round trips make it exact enough.
          'server_cpu_ms_per_round_trip': 1000 * (cpu_end - cpu_start) / len(round_trips)}


def learner_python(agent, envs_per_step, calls: int, repeats: int):
  """Median over `repeats` of the mean ms per Step of each part, for each Step size."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from seed import protocol  # pylint: disable=g-import-not-at-top
  from seed.learner.counters import Counters  # pylint: disable=g-import-not-at-top
  from seed.envs import EnvConfig  # pylint: disable=g-import-not-at-top
  from seed.inference.env_state import EnvTable  # pylint: disable=g-import-not-at-top
  from seed.inference import step_processor  # pylint: disable=g-import-not-at-top
  from seed.proto import actor_learner_pb2 as pb  # pylint: disable=g-import-not-at-top
  largest = max(envs_per_step)
  spec = EnvConfig().spec()  # gin is parsed: the env the agent was made for
  processor = step_processor.StepProcessor(
      agent, largest, spec.frames_per_step, put_unroll=lambda unroll: True,
      on_episode=lambda *episode: None, on_batch=lambda stats: None, counters=Counters())
  processor.warm_up()
  policy_s = [0.0]

  def timed(policy):
    def call(*inputs):
      start = time.perf_counter()
      outputs = policy(*inputs)
      policy_s[0] += time.perf_counter() - start
      return outputs
    return call
  # The policy's outputs are tensors: their conversion to arrays stays in the bookkeeping.
  processor._policies = [{size: timed(policy) for size, policy in lane.items()}  # pylint: disable=protected-access
                         for lane in processor._policies]  # pylint: disable=protected-access
  table = EnvTable(agent.initial_core_state, agent.acting_params, agent.unroll_length,
                   agent.unroll_overlap)
  rng = np.random.default_rng(0)
  rows = []
  for k in envs_per_step:
    slots = table.connect(k, 'bench', k)
    observations = rng.integers(0, 255, (k,) + spec.observation_shape).astype(
        spec.observation_dtype)
    data = protocol.make_step(observations, [0.0] * k, [False] * k,
                              [False] * k).SerializeToString()

    def one_step():
      start = time.perf_counter()
      message = protocol.parse_actor_message(data)
      inputs = protocol.decode_step(message.step, spec, k)
      decoded = time.perf_counter()
      before = policy_s[0]
      [actions] = processor([step_processor.StepRequest(slots, *inputs)])
      processed = time.perf_counter()
      protocol.check_actions(actions, spec, k)
      pb.LearnerMessage(actions=pb.Actions(
          actions=protocol.encode_tensor(actions))).SerializeToString()
      policy = policy_s[0] - before
      return (decoded - start, processed - decoded - policy, time.perf_counter() - processed,
              policy)
    for _ in range(20):
      one_step()
    per_repeat = [np.mean([one_step() for _ in range(calls)], axis=0) for _ in range(repeats)]
    parts = np.median(per_repeat, axis=0) * 1000
    names = ('decode the Step', "the batch's bookkeeping around the policy",
             'check and encode the actions', 'the policy call (for scale)')
    rows += [{'figure': name, 'envs_per_step': k, 'p50_ms': float(ms)}
             for name, ms in zip(names, parts)]
  return rows


def tf_call(agent, batch_sizes, calls: int, repeats: int):
  """Median over `repeats` of the mean ms per call, for each function and input kind."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  @tf.function
  def does_nothing(observation, reward, done, core_state, acting):
    del reward, done, core_state, acting
    return tf.zeros(tf.shape(observation)[:1], tf.int32)

  rows = []
  for size in batch_sizes:
    arrays = agent._example_inputs(size)  # pylint: disable=protected-access
    tensors = tf.nest.map_structure(tf.convert_to_tensor, arrays)
    input_kinds = (('numpy arrays', lambda: arrays), ('the same tensors', lambda: tensors),
                   ('numpy arrays copied by tf.constant',
                    lambda: tf.nest.map_structure(tf.constant, arrays)))
    functions = (('a function that does nothing', does_nothing.get_concrete_function(*arrays),
                  input_kinds),
                 ('the policy', agent.batched_policy(size), input_kinds[:1]))
    for name, function, kinds in functions:
      for kind, make_inputs in kinds:
        for _ in range(20):
          function(*make_inputs())
        per_call = []
        for _ in range(repeats):
          start = time.perf_counter()
          for _ in range(calls):
            out = function(*make_inputs())
          tf.nest.map_structure(lambda t: t.numpy(), out)
          per_call.append(1000 * (time.perf_counter() - start) / calls)
        rows.append({'figure': f'{name}, called with {kind}', 'batch_size': size,
                     'p50_ms': statistics.median(per_call)})
  return rows


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--gin_file', default='gin/atari/vtrace.gin')
  parser.add_argument('--agent', default='vtrace')
  parser.add_argument('--batch_sizes', default='1')
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--gpu_proxy', action='store_true',
                      help='a policy of almost no cost (bench.model_cost.GPU_PROXY_BINDINGS)')
  parser.add_argument('--tf_intra_op_threads', type=int, default=1)
  parser.add_argument('--request_bytes', type=int, default=84 * 84 * 4)
  parser.add_argument('--seconds', type=float, default=4.0, help='per transport figure')
  parser.add_argument('--calls', type=int, default=300)
  parser.add_argument('--repeats', type=int, default=7)
  args = parser.parse_args(argv)
  cpu = hardware.describe()  # every row names the CPU it was measured on
  for thread_hop in (False, True):
    print(json.dumps({**transport(args.request_bytes, args.seconds, thread_hop), 'cpu': cpu}),
          flush=True)
  from bench import model_cost  # pylint: disable=g-import-not-at-top
  from seed.inference import step_processor  # pylint: disable=g-import-not-at-top
  batch_sizes = [int(s) for s in args.batch_sizes.split(',')]
  bindings = args.gin_bindings + (model_cost.gpu_proxy_bindings(args.agent)
                                  if args.gpu_proxy else [])
  # One agent for both (gin is parsed once a process): the learner's padded sizes too.
  agent = model_cost.build_agent(
      args.gin_file, args.agent,
      sorted(set(batch_sizes) | set(step_processor.padded_batch_sizes(max(batch_sizes)))),
      args.tf_intra_op_threads, bindings)
  for row in learner_python(agent, batch_sizes, args.calls, args.repeats):
    print(json.dumps({**row, 'cpu': cpu}), flush=True)
  for row in tf_call(agent, batch_sizes, args.calls, args.repeats):
    print(json.dumps({**row, 'cpu': cpu}), flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())

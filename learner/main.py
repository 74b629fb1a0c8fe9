"""Learner process: flags -> gin -> build -> serve and train.

  python -m seed.learner.main --logdir=runs/x --gin_file=gin/toy/vtrace.gin
  SEED_LOGDIR=runs/x SEED_GIN_FILE=gin/toy/vtrace.gin seed-learner

Every flag may also come from SEED_<FLAG> (see seed.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
import dataclasses
import logging
import sys

from absl import flags

from seed import flag_env, malloc_tuning

FLAGS = flags.FLAGS
flags.DEFINE_string('logdir', None, 'Run directory: checkpoints, summaries, logs. '
                    'Training resumes from the checkpoint found here.')
flags.DEFINE_string('summary_dir', None, 'TensorBoard summaries go here (default: --logdir).')
flags.DEFINE_string('hypertune_metric', None, 'Report the mean episode return under this '
                    'metric id to a Vertex AI hyperparameter tuning job (cloudml-hypertune), '
                    'each progress interval.')
flags.DEFINE_string('agent', 'vtrace', 'Agent name (see seed.agents.AGENTS).')
flags.DEFINE_string('env', None, 'Environment name (e.g. Catch, atari:Pong); binds '
                    'EnvConfig.name over the gin files and bindings.')
flags.DEFINE_multi_string('gin_file', [], 'Gin config files.')
flags.DEFINE_multi_string('gin_bindings', [], 'Gin bindings, applied after the files.')
flags.DEFINE_string('server_address', 'localhost:8686',
                    'host:port to listen on. Stays on localhost unless told otherwise; '
                    'listen on other interfaces only with --tls_cert_file and --auth_token_file.')
flags.DEFINE_integer('health_port', 0, 'Also serve the gRPC health service (grpc.health.v1, '
                     'and nothing else) in plaintext on this port of the --server_address host, '
                     'for Kubernetes probes (0: only on the main port).')
flags.DEFINE_integer('inference_batch_size', 64, 'Most envs in one inference batch.')
flags.DEFINE_float('max_wait_ms', 5.0, 'Run a partial batch after waiting this long.')
flags.DEFINE_float('checkpoint_interval_s', 300.0, 'Seconds between checkpoints.')
flags.DEFINE_float('progress_interval_s', 5.0, 'Seconds between progress lines/summaries.')
flags.DEFINE_integer('max_env_frames', 0, 'Stop after this many env frames (0: never).')
flags.DEFINE_float('target_return', None, 'Stop once the mean return of the last '
                   '--return_window episodes reaches this.')
flags.DEFINE_float('shutdown_limit_s', 20.0, 'Longest a stopping learner may take for its '
                   'last checkpoint and closing; then it exits anyway (0 if that checkpoint '
                   'was written, else 1). Spot VMs give 30 s after SIGTERM; give less than '
                   'the platform\'s grace period (Kubernetes: terminationGracePeriodSeconds).')
flags.DEFINE_float('run_lock_stale_s', 120.0, 'A run directory\'s lock (learner.lock) whose '
                   'heartbeat is older than this is taken over; a fresher one held by a '
                   'learner of another job or host is waited for this long, then refused.')
flags.DEFINE_integer('stopped_exit_code', 0, 'Exit code of a learner that a signal '
                     'stopped before its --max_env_frames or --target_return, once its '
                     'checkpoint is written. 0 suits a laptop\'s Ctrl-C; a Kubernetes Job '
                     'sets 75, so a preempted learner is started again, not counted done.')
flags.DEFINE_integer('return_window', 20, 'Episodes in the reported mean return.')
flags.DEFINE_integer('max_message_mb', 16, 'Largest message accepted from an actor.')
flags.DEFINE_integer('max_envs_per_actor', 0, 'Most envs one actor stream may step '
                     '(0: --inference_batch_size, the most one batch holds).')
flags.DEFINE_integer('max_actor_streams', 1024, 'Most actor streams open at once; one more '
                     'is refused with RESOURCE_EXHAUSTED.')
flags.DEFINE_float('hello_timeout_s', 30.0, 'End a stream that sends no hello this long '
                   'after opening.')
flags.DEFINE_float('stream_idle_timeout_s', 600.0, 'End an actor stream that sends no step '
                   'this long after its last actions (a hung actor frees its envs\' state).')
flags.DEFINE_float('max_abs_input', 1e9, 'Refuse a step whose rewards or float observations '
                   'exceed this magnitude (they would overflow the loss).')
flags.DEFINE_integer('max_nonfinite_steps', 100, 'Stop (without a checkpoint, so the last '
                     'one keeps good parameters) after this many train steps in a row whose '
                     'loss or gradients were NaN/Inf; each such step changes nothing.')
flags.DEFINE_bool('anneal_learning_rate', False, 'Lower every optimizer\'s step size '
                  'linearly from the configured one to 0 at --max_env_frames (IMPALA and '
                  'SEED do, as cleanrl\'s anneal_lr); needs --max_env_frames.')
flags.DEFINE_bool('lockstep', False, 'Act and train in lockstep (V-trace, PPO): the unroll '
                  'that completes a batch waits until that batch is trained, so every '
                  'step after it acts with the new parameters. With --seed, one actor '
                  '(--num_splits=1) and the default queue, a run repeats exactly; slower.')
flags.DEFINE_float('eval_interval_s', 0.0, 'Evaluate a checkpoint this often while training '
                   '(0: never): after a checkpoint, python -m seed.evaluate plays '
                   '--eval_episodes greedy episodes in a child process and logs them to '
                   'TensorBoard (RUN/evaluation/tb); evaluations follow checkpoints, so '
                   'set --checkpoint_interval_s no longer than this.')
flags.DEFINE_integer('eval_episodes', 5, 'Episodes each periodic evaluation plays.')
flags.DEFINE_bool('eval_video', False, 'Periodic evaluations also record the first '
                  'episode: RUN/evaluation/ckpt-N.mp4 and a GIF in TensorBoard.')
flags.DEFINE_bool('log_train_steps', False, 'Write every train step\'s losses and '
                  'statistics to train_steps.csv in the run directory.')
flags.DEFINE_integer('seed', 0, 'Seed of the agent (binds <AgentConfig>.seed: network init, '
                     'action sampling, exploration), its replay sampling and the env probe. '
                     'Give actors the same --seed for a reproducible run.')
flags.DEFINE_integer('num_seeds', 1, 'Independent agents trained together in this learner '
                     '(seeds --seed, --seed + 1, ...): one network with a seed axis, one '
                     'update for all, a replay each; env k feeds seed k mod num_seeds. SAC, '
                     'DDPG and their SR- variants.')
flags.DEFINE_integer('tf_intra_op_threads', 0, 'Threads inside one TensorFlow op '
                     '(0: TensorFlow picks, one per core).')
flags.DEFINE_integer('tf_inter_op_threads', 0, 'Ops TensorFlow runs at once (0: it picks).')
flags.DEFINE_bool('train', True, 'Train. --notrain serves inference only and drops the '
                  'unrolls (to measure the inference loop).')
flags.DEFINE_bool('checkpoint_replay', True, 'Save replay contents with each checkpoint, so '
                  'a resumed run keeps them (replay agents; the file can be GBs).')
flags.DEFINE_string('init_checkpoint', None, 'Start a new run from this checkpoint (a prefix '
                    'like RUN/ckpt/ckpt-7, or a run directory: its latest): model, optimizer '
                    'and agent state. Ignored when --logdir has a checkpoint of its own.')
flags.DEFINE_string('init_counters', 'restart', 'With --init_checkpoint: restart (env frames '
                    'and learner steps from 0) or continue (from the checkpoint\'s).')
flags.DEFINE_string('replay_parameters', None, 'Replay mixture of a queue-fed agent (vtrace, '
                    'ppo) as JSON, over ReplayMixtureConfig.replays: a list of replays with '
                    'kind (queue, uniform, prioritized, elite, attentive), capacity and '
                    'sample_ratio, e.g. \'[{"kind": "queue", "capacity": 1, "sample_ratio": '
                    '0.5}, {"kind": "uniform", "capacity": 10000, "sample_ratio": 0.5}]\'.')
flags.DEFINE_string('tls_cert_file', None, 'PEM certificate: serve over TLS.')
flags.DEFINE_string('tls_key_file', None, 'PEM private key for --tls_cert_file.')
flags.DEFINE_string('auth_token_file', None, 'File with a shared token actors must present '
                    '(or put the token itself in SEED_AUTH_TOKEN).')


def main(argv):
  del argv
  malloc_tuning.keep_large_buffers()
  logging.getLogger().setLevel(logging.INFO)
  from seed.learner import launch as learner_launch  # pylint: disable=g-import-not-at-top
  flags_given = learner_launch.LearnerFlags(**{
      field.name: getattr(FLAGS, field.name)
      for field in dataclasses.fields(learner_launch.LearnerFlags)})
  sys.exit(learner_launch.launch(flags_given, FLAGS.flags_into_string()))


def run():
  flag_env.run(main, __name__)


if __name__ == '__main__':
  run()

"""Learner process: flags -> gin -> build -> serve and train.

  python -m seed.learner.main --logdir=runs/x --gin_file=gin/toy/vtrace.gin
  SEED_LOGDIR=runs/x SEED_GIN_FILE=gin/toy/vtrace.gin seed-learner

Every flag may also come from SEED_<FLAG> (see seed.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
import logging
import os
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
flags.DEFINE_integer('return_window', 20, 'Episodes in the reported mean return.')
flags.DEFINE_integer('max_message_mb', 16, 'Largest message accepted from an actor.')
flags.DEFINE_integer('seed', 0, 'Seed of the env probe and the agent.')
flags.DEFINE_integer('tf_intra_op_threads', 0, 'Threads inside one TensorFlow op '
                     '(0: TensorFlow picks, one per core).')
flags.DEFINE_integer('tf_inter_op_threads', 0, 'Ops TensorFlow runs at once (0: it picks).')
flags.DEFINE_bool('train', True, 'Train. --notrain serves inference only and drops the '
                  'unrolls (to measure the inference loop).')
flags.DEFINE_bool('checkpoint_replay', True, 'Save replay contents with each checkpoint, so '
                  'a resumed run keeps them (replay agents; the file can be GBs).')
flags.DEFINE_string('tls_cert_file', None, 'PEM certificate: serve over TLS.')
flags.DEFINE_string('tls_key_file', None, 'PEM private key for --tls_cert_file.')
flags.DEFINE_string('auth_token_file', None, 'File with a shared token actors must present '
                    '(or put the token itself in SEED_AUTH_TOKEN).')


def main(argv):
  del argv
  malloc_tuning.keep_large_buffers()
  from seed import agents, config, security  # pylint: disable=g-import-not-at-top

  logging.getLogger().setLevel(logging.INFO)
  # Settings and files are checked before TensorFlow loads and before anything
  # listens. A config mistake is said in one line, without a traceback.
  try:
    flag_env.require(FLAGS.logdir, 'logdir', 'the run directory')
    auth_token = security.read_token(FLAGS.auth_token_file)
    credentials = security.server_credentials(FLAGS.tls_cert_file, FLAGS.tls_key_file)
    security.check_listen_address(FLAGS.server_address, FLAGS.tls_cert_file, auth_token)
    if not 0 <= FLAGS.health_port < 65536:
      raise ValueError(f'--health_port={FLAGS.health_port}; expected a port 1-65535, or 0 '
                       'for none')
  except ValueError as e:
    logging.error('%s', e)
    sys.exit(2)
  os.makedirs(FLAGS.logdir, exist_ok=True)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Must happen before TensorFlow runs anything (agent modules may, at import).
  tf.config.threading.set_intra_op_parallelism_threads(FLAGS.tf_intra_op_threads)
  tf.config.threading.set_inter_op_parallelism_threads(FLAGS.tf_inter_op_threads)
  from seed.learner_runtime import Learner, LearnerOptions  # pylint: disable=g-import-not-at-top
  try:
    agents.agent_class(FLAGS.agent)  # Registers the agent's configurables before parsing.
    config.parse_gin(FLAGS.gin_file, FLAGS.gin_bindings, env_name=FLAGS.env)
  except (ValueError, FileNotFoundError) as e:
    logging.error('%s', e)
    sys.exit(2)
  options = LearnerOptions(
      logdir=FLAGS.logdir, summary_dir=FLAGS.summary_dir,
      hypertune_metric=FLAGS.hypertune_metric, agent=FLAGS.agent, server_address=FLAGS.server_address,
      health_port=FLAGS.health_port,
      inference_batch_size=FLAGS.inference_batch_size, max_wait_ms=FLAGS.max_wait_ms,
      checkpoint_interval_s=FLAGS.checkpoint_interval_s,
      progress_interval_s=FLAGS.progress_interval_s, max_env_frames=FLAGS.max_env_frames,
      target_return=FLAGS.target_return, return_window=FLAGS.return_window,
      max_message_bytes=FLAGS.max_message_mb << 20, auth_token=auth_token,
      credentials=credentials, seed=FLAGS.seed, train=FLAGS.train,
      checkpoint_replay=FLAGS.checkpoint_replay)
  learner = Learner(options)
  config.write_run_config(FLAGS.logdir, FLAGS.flags_into_string())
  logging.info('agent %s on %s (%s); resumed: %s', FLAGS.agent, learner.env_name,
               learner.env_spec.describe(), learner.resumed)
  sys.exit(learner.run())


def run():
  flag_env.run(main, __name__)


if __name__ == '__main__':
  run()

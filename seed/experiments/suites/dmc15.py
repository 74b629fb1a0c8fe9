"""DMC15: one agent on the 15 DeepMind Control tasks x N seeds, reported as an IQM.

  seed suite dmc15 run --root runs/dmc15 --agent sr_sac --seeds 0,1,2 \\
      --env_steps 500000 [--tasks walker-run cheetah-run ...] [--gin_bindings ...]
  seed suite dmc15 report --root runs/dmc15 [--png docs/dmc15.png]
  seed suite dmc15 report --scores_file docs/figures/dmc15_scores.json [--png ...]

`run` writes ROOT/dmc15.json (an experiments file: one entry per task, named by the
task) and hands it to the experiment runner (seed.experiments), which skips a run whose
finished.json shows the budget and resumes any other from its checkpoint. So the
command is resumable: run it again after a stop. Agents that train several seeds in
one learner (--num_seeds: sac, ddpg, sr_sac, sr_ddpg) do so here: one run per task in
ROOT/<task>__seed=<first seed>, the seeds consecutive, one actor with one env per seed
and a budget of env_steps per seed. --learner_per_seed (and every other agent) runs
each task x seed in ROOT/<task>__seed=<k> with its own learner and one env.

`report` scores each finished run by the mean return of its last 10 training episodes
(the behaviour policy, 1,000 steps each on the suite's tasks), then over the tasks
that every seed finished: the per-task mean and the interquartile mean (IQM) across
tasks and seeds, with 95% confidence intervals from the stratified bootstrap (seeds
resampled within each task), both from rliable (Agarwal et al., 2021). It prints a
Markdown table, writes ROOT/dmc15_report.json and the scores it used to
ROOT/dmc15_scores.json ({task: {seed: score}}), and with --png a figure.
--scores_file adds such a file's scores for the tasks the root has not finished (a
task scored in an earlier run, whose run directory is gone), or without --root
reports on the file alone: the scores behind a figure in the docs are kept that way.

The task list is D'Oro et al.'s (2023) DMC15. Never part of CI beyond a tiny run: the
full budget is 15 x 500K env steps per seed.
"""
import argparse
import json
import os
import sys
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np

from seed import agents as agents_lib
from seed import config
from seed.run_dir import records, status

DMC15 = ('acrobot-swingup', 'cheetah-run', 'finger-turn_hard', 'fish-swim', 'hopper-hop',
         'hopper-stand', 'humanoid-run', 'humanoid-stand', 'humanoid-walk',
         'pendulum-swingup', 'quadruped-run', 'quadruped-walk', 'reacher-hard',
         'swimmer-swimmer6', 'walker-run')
PLAN_FILE = 'dmc15.json'
REPORT_FILE = 'dmc15_report.json'
SCORES_FILE = 'dmc15_scores.json'
SCORE_EPISODES = 10
BOOTSTRAP_REPS = 5000
CONFIDENCE = 0.95


def check_tasks(tasks: Sequence[str]) -> List[str]:
  """The tasks, each one of DMC15; raises ValueError naming one that is not."""
  for task in tasks:
    if task not in DMC15:
      raise ValueError(f'unknown DMC15 task {task!r}; valid tasks: {", ".join(DMC15)}')
  return list(tasks)


def run_name(task: str, seed: int) -> str:
  """The run directory under the root (the experiment runner's name for it)."""
  return f'{task}__seed={seed}'


def _one_learner_flags(seeds: Sequence[int], env_steps: int) -> Dict[str, str]:
  """The learner flags that train `seeds` in one learner; ValueError unless they are
  consecutive (the learner trains seeds --seed, --seed + 1, ...)."""
  if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
    raise ValueError(f'seeds {",".join(map(str, seeds))}: seeds trained in one learner are '
                     f'consecutive (e.g. {seeds[0]},{seeds[0] + 1},{seeds[0] + 2}); pass '
                     '--learner_per_seed for any other set')
  # The learner counts the env frames of all its seeds together.
  return {'max_env_frames': str(env_steps * len(seeds)), 'num_seeds': str(len(seeds))}


def plan(agent: str, tasks: Sequence[str], seeds: Sequence[int], env_steps: int,
         gin_bindings: Sequence[str] = (), learner_flags: Optional[Dict[str, str]] = None,
         one_learner: Optional[bool] = None) -> List[dict]:
  """The experiments file's entries: one per task. With `one_learner` (the default for
  agents that can) all seeds train in one learner, else each seed in its own."""
  if agent not in agents_lib.AGENTS:
    raise ValueError(f'unknown agent {agent!r}; known agents: '
                     f'{", ".join(sorted(agents_lib.AGENTS))}')
  gin_file = os.path.join(config.gin_root(), 'dmc', f'{agent}.gin')
  if not os.path.exists(gin_file):
    raise ValueError(f'agent {agent!r} has no DM Control config (gin/dmc/{agent}.gin)')
  if env_steps < 1:
    raise ValueError(f'env_steps must be >= 1, got {env_steps}')
  if not seeds:
    raise ValueError('no seeds given; expected e.g. 0,1,2')
  if one_learner is None:
    one_learner = agent in agents_lib.MULTI_SEED_AGENTS
  # The suite configs act every env step (action_repeat 1): env frames are env steps.
  if one_learner:
    flags, run_seeds, num_envs = _one_learner_flags(seeds, env_steps), [seeds[0]], len(seeds)
  else:
    flags, run_seeds, num_envs = {'max_env_frames': str(env_steps)}, list(seeds), 1
  return [{'name': task, 'agent': agent, 'gin_file': gin_file,
           'gin_bindings': [f"EnvConfig.name = 'dmc:{task}'", *gin_bindings],
           'learner_flags': {**flags, **(learner_flags or {})}, 'seeds': run_seeds,
           'num_actors': 1, 'num_envs': num_envs}
          for task in check_tasks(tasks)]


def run(root: str, entries: List[dict], extra_args: Sequence[str] = ()) -> int:
  """Writes the plan and runs it through seed.experiments; that runner's exit code."""
  from seed.experiments import __main__ as experiments  # pylint: disable=g-import-not-at-top
  os.makedirs(root, exist_ok=True)
  path = os.path.join(root, PLAN_FILE)
  with open(path, 'w') as f:
    json.dump(entries, f, indent=1)
  return experiments.main(['--root', root, '--experiments', path, *extra_args])


def final_scores(run_dir: str, num_seeds: int = 1) -> List[Optional[float]]:
  """Per seed index of a run's learner, the mean return of its last SCORE_EPISODES
  episodes; None for every seed of a run not finished, and for a seed with no episode
  ended."""
  if status.read_finished(run_dir) is None:
    return [None] * num_seeds
  returns = [[] for _ in range(num_seeds)]
  for episode in records.read_training_episodes(run_dir):
    returns[episode.seed_index].append(episode.episode_return)
  return [float(np.mean(r[-SCORE_EPISODES:])) if r else None for r in returns]


def scores_of(root: str) -> Dict[str, Dict[int, Optional[float]]]:
  """{task: {seed: score or None (unfinished)}} for the plan in ROOT/dmc15.json."""
  with open(os.path.join(root, PLAN_FILE)) as f:
    entries = json.load(f)
  scores = {}
  for entry in entries:
    num_seeds = int(entry['learner_flags'].get('num_seeds', 1))
    scores[entry['name']] = {
        seed + k: score for seed in entry['seeds']
        for k, score in enumerate(final_scores(os.path.join(root, run_name(entry['name'], seed)),
                                               num_seeds))}
  return scores


def read_scores(path: str) -> Dict[str, Dict[int, Optional[float]]]:
  """A scores file ({task: {seed: score or null}}); ValueError naming the path and an
  unknown task or a seed that is not an int."""
  with open(path) as f:
    raw = json.load(f)
  scores = {}
  for task, by_seed in raw.items():
    check_tasks([task])
    try:
      scores[task] = {int(seed): None if score is None else float(score)
                      for seed, score in by_seed.items()}
    except (TypeError, ValueError, AttributeError):
      raise ValueError(f'{path}: task {task!r} needs {{seed: score}} with int seeds, got '
                       f'{by_seed!r}') from None
  return scores


def merged_scores(root_scores: Dict[str, Dict[int, Optional[float]]],
                  recorded: Dict[str, Dict[int, Optional[float]]]):
  """The root's scores, with a recorded task's scores where the root has no finished
  run of that task (any seed unscored)."""
  merged = dict(root_scores)
  for task, by_seed in recorded.items():
    ours = merged.get(task)
    if ours is None or any(score is None for score in ours.values()):
      merged[task] = dict(by_seed)
  return merged


def aggregate(scores: Dict[str, Dict[int, Optional[float]]], reps: int = BOOTSTRAP_REPS,
              random_seed: int = 0) -> dict:
  """Per-task means and the IQM over the tasks every seed finished, with 95% CIs.

  Returns:
    {'tasks': [names], 'seeds': [seeds], 'per_task': {task: {'mean', 'low', 'high',
    'scores'}}, 'iqm': {'value', 'low', 'high'}, 'unfinished': ['<task> seed <k>', ...]}.
    'iqm' is None when no task is complete; unfinished runs are named '<task> seed <k>'.
  """
  from rliable import library as rly  # pylint: disable=g-import-not-at-top
  from rliable import metrics  # pylint: disable=g-import-not-at-top
  unfinished = [f'{task} seed {seed}' for task, by_seed in scores.items()
                for seed, score in by_seed.items() if score is None]
  complete = [task for task, by_seed in scores.items()
              if by_seed and all(score is not None for score in by_seed.values())]
  result = {'tasks': complete, 'seeds': [], 'per_task': {}, 'iqm': None,
            'unfinished': unfinished}
  if not complete:
    return result
  seeds = sorted(scores[complete[0]])
  # rliable's layout: [runs, tasks]; the stratified bootstrap resamples runs per task.
  matrix = np.array([[scores[task][seed] for task in complete] for seed in seeds])

  def task_means_then_iqm(x):
    return np.concatenate([np.mean(x, axis=0), [metrics.aggregate_iqm(x)]])

  # rliable's StratifiedBootstrap draws its resamples from NumPy's global generator
  # (update_indices calls np.random.choice), whatever random_state it is given: the
  # global state is seeded here and put back after, so the intervals repeat.
  global_state = np.random.get_state()
  np.random.seed(random_seed)
  try:
    with warnings.catch_warnings():
      # rliable hands arch its random_state, which arch 7 calls deprecated.
      warnings.filterwarnings('ignore', 'random_state is deprecated', FutureWarning)
      points, intervals = rly.get_interval_estimates(
          {'runs': matrix}, task_means_then_iqm, reps=reps,
          confidence_interval_size=CONFIDENCE, random_state=np.random.RandomState(random_seed))
  finally:
    np.random.set_state(global_state)
  point, (low, high) = points['runs'], intervals['runs']
  for i, task in enumerate(complete):
    result['per_task'][task] = {'mean': float(point[i]), 'low': float(low[i]),
                                'high': float(high[i]), 'scores': matrix[:, i].tolist()}
  result['seeds'] = seeds
  result['iqm'] = {'value': float(point[-1]), 'low': float(low[-1]), 'high': float(high[-1])}
  return result


def markdown(report: dict) -> str:
  lines = ['| task | mean return (last 10 episodes) | 95% CI | per seed |', '|---|---:|---|---|']
  for task, row in report['per_task'].items():
    per_seed = ', '.join(f'{s:.1f}' for s in row['scores'])
    lines.append(f'| {task} | {row["mean"]:.1f} | [{row["low"]:.1f}, {row["high"]:.1f}] | '
                 f'{per_seed} |')
  if report['iqm'] is not None:
    iqm = report['iqm']
    lines.append(f'| **IQM** ({len(report["tasks"])} tasks x {len(report["seeds"])} seeds) | '
                 f'**{iqm["value"]:.1f}** | [{iqm["low"]:.1f}, {iqm["high"]:.1f}] | |')
  if report['unfinished']:
    lines.append('\nNo score yet (unfinished, or no episode ended), so their tasks are left '
                 f'out: {", ".join(report["unfinished"])}')
  return '\n'.join(lines)


def plot(report: dict, path: str, title: str) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  rows = list(report['per_task'].items())
  if report['iqm'] is not None:
    rows.append(('IQM', {'mean': report['iqm']['value'], 'low': report['iqm']['low'],
                         'high': report['iqm']['high']}))
  figure, axes = pyplot.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
  names = [name for name, _ in rows][::-1]
  means = np.array([row['mean'] for _, row in rows][::-1])
  errors = np.array([[row['mean'] - row['low'], row['high'] - row['mean']]
                     for _, row in rows][::-1]).T
  colors = ['tab:orange' if name == 'IQM' else 'tab:blue' for name in names]
  axes.barh(names, means, xerr=errors, color=colors, capsize=3)
  axes.set_xlabel('return (mean of the last 10 episodes; 95% stratified-bootstrap CI)')
  axes.set_title(title)
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  pyplot.close(figure)



def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  commands = parser.add_subparsers(dest='command', required=True)
  run_parser = commands.add_parser('run', help='train every task x seed (resumable)')
  run_parser.add_argument('--root', required=True)
  run_parser.add_argument('--agent', default='sr_sac')
  run_parser.add_argument('--tasks', nargs='+', default=list(DMC15))
  run_parser.add_argument('--seeds', default='0,1,2', help='comma-separated, e.g. 0,1,2')
  run_parser.add_argument('--env_steps', type=int, default=500_000)
  run_parser.add_argument('--learner_per_seed', action='store_true',
                          help='one learner per task x seed, even for an agent that can '
                          'train the seeds in one learner')
  run_parser.add_argument('--gin_bindings', action='append', default=[])
  run_parser.add_argument('--learner_flag', action='append', default=[],
                          help='passed to seed.experiments, e.g. --learner_flag=--seed_port=0')
  report_parser = commands.add_parser('report', help='scores, IQM and CIs of finished runs')
  report_parser.add_argument('--root', help='the run root (its dmc15.json and runs)')
  report_parser.add_argument('--scores_file',
                             help='{task: {seed: score}} for tasks the root has not finished')
  report_parser.add_argument('--png', help='also draw the table as a figure here')
  report_parser.add_argument('--reps', type=int, default=BOOTSTRAP_REPS)
  args = parser.parse_args(argv)
  if args.command == 'run':
    try:
      seeds = [int(s) for s in args.seeds.split(',') if s.strip()]
      entries = plan(args.agent, args.tasks, seeds, args.env_steps, args.gin_bindings,
                     one_learner=False if args.learner_per_seed else None)
    except ValueError as e:
      print(f'seed.experiments.suites.dmc15: {e}', file=sys.stderr)
      return 2
    return run(args.root, entries, [f'--learner_flag={f}' for f in args.learner_flag])
  if not (args.root or args.scores_file):
    parser.error('report needs --root, --scores_file or both')
  try:
    scores = scores_of(args.root) if args.root else {}
    if args.scores_file:
      scores = merged_scores(scores, read_scores(args.scores_file))
  except (OSError, ValueError) as e:
    print(f'seed.experiments.suites.dmc15: {e}', file=sys.stderr)
    return 2
  report = aggregate(scores, reps=args.reps)
  if args.root:
    with open(os.path.join(args.root, REPORT_FILE), 'w') as f:
      json.dump(report, f, indent=1)
    with open(os.path.join(args.root, SCORES_FILE), 'w') as f:
      json.dump(scores, f, indent=1)
  print(markdown(report))
  if args.png and report['per_task']:
    plot(report, args.png, f'DMC15 at {args.root or args.scores_file}')
  return 0


if __name__ == '__main__':
  sys.exit(main())

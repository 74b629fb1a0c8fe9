"""seed/experiments/suites/atari5.py and atari_references: the plan, the scores, the
estimate against the published one, and every refusal naming what it has."""
import csv
import json
import shutil

import numpy as np
import pytest

from seed.experiments import atari_references as refs
from seed.experiments.suites import atari5


def test_the_estimate_gives_dopamine_s_published_atari5():
  # ATARI-REFERENCES.md: Atari-5 of Dopamine's Rainbow 43 and IQN 68 at 10M frames,
  # Rainbow 82 and DQN 28 at 20M.
  def estimate(name, frames):
    at = refs.FRAMES.index(frames)
    values = refs.PUBLISHED[refs.source_named(name)]
    return refs.atari5_estimate({game: values[game][at] for game in refs.ATARI5_GAMES})
  assert estimate('Dopamine Rainbow', 10_000_000) == pytest.approx(43.1, abs=0.05)
  assert estimate('Dopamine IQN', 10_000_000) == pytest.approx(68.2, abs=0.05)
  assert estimate('Dopamine Rainbow', 20_000_000) == pytest.approx(82.1, abs=0.05)
  assert estimate('Dopamine DQN', 20_000_000) == pytest.approx(28.2, abs=0.05)


def test_human_normalised_by_hand():
  # Qbert: random 163.88, human 13,455.
  assert refs.human_normalised('Qbert', 163.88) == 0
  assert refs.human_normalised('Qbert', 13_455) == pytest.approx(100)
  assert refs.human_normalised('Qbert', 6_809.44) == pytest.approx(50)
  # Human level on every game: 10 ** (sum of weights * log10(101)) - 1.
  humans = {game: human for game, (_, human) in refs.RANDOM_AND_HUMAN.items()}
  weights = sum(refs.ATARI5_WEIGHTS.values())
  assert refs.atari5_estimate(humans) == pytest.approx(101 ** weights - 1)
  # Below random counts as 0.
  randoms = {game: random - 1000 for game, (random, _) in refs.RANDOM_AND_HUMAN.items()}
  assert refs.atari5_estimate(randoms) == 0
  with pytest.raises(ValueError, match='missing: Qbert'):
    refs.atari5_estimate({g: 0 for g in refs.ATARI5_GAMES if g != 'Qbert'})


def test_the_plan_trains_the_shipped_config_with_only_the_game_changed():
  entries = atari5.plan('vtrace', 10_000_000)
  assert [e['name'] for e in entries] == list(refs.ATARI5_GAMES)
  for entry in entries:
    assert entry['gin_file'].endswith('gin/atari/vtrace.gin')
    assert entry['gin_bindings'] == [f"EnvConfig.name = 'atari:{entry['name']}'"]
    assert entry['learner_flags'] == {'max_env_frames': '10000000'}
    assert (entry['num_actors'], entry['num_envs'], entry['seeds']) == (2, 4, [0])


def test_refusals_name_the_value_and_what_is_accepted(capsys):
  with pytest.raises(ValueError, match=r"agent 'sac' has no Atari config \(gin/atari/sac.gin\); "
                     r'the Atari configs: acer, ppo, .*vtrace'):
    atari5.plan('sac', 1000)
  assert atari5.main(['run', '--root', '/nonexistent', '--games', 'Pong']) == 2
  assert "'Pong' is not an Atari-5 game; the five: BattleZone" in capsys.readouterr().err
  assert atari5.main(['report', '--csv', '/nonexistent/learning_breakout.csv']) == 2
  assert 'should name one Atari-5 game' in capsys.readouterr().err


def _write_curve(path, label, frames, returns):
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(['label', 'role', 'seed', 'env_frames', 'wall_s', 'episode_return'])
    for i, (frame, value) in enumerate(zip(frames, returns)):
      writer.writerow([label, 'run', 0, frame, i, value])
    writer.writerow([label, 'evaluation', 0, frames[-1], 0, 1e9])  # never scored


def _five_curves(tmp_path, reach=10_000_000, episodes=300, short_game=None, short_episodes=None):
  paths = []
  for game in refs.ATARI5_GAMES:
    n = short_episodes if game == short_game and short_episodes else episodes
    last = reach if game == short_game else 10_000_000
    frames = np.linspace(last / n, last, n).astype(int)
    # Returns rise 0, 1, ..., n - 1: the last 100 by 10M have a known mean.
    path = tmp_path / f'learning_{game.lower()}.csv'
    _write_curve(path, 'V-trace', frames, np.arange(n, dtype=float))
    paths.append(str(path))
  return paths


def test_scores_and_estimate_from_curve_files(tmp_path, capsys):
  paths = _five_curves(tmp_path)
  code = atari5.main(['report'] + [f'--csv={p}' for p in paths])
  out = capsys.readouterr().out
  assert code == 0, out
  mean = np.mean(np.arange(200, 300))  # the last 100 of 300 episodes
  expected = refs.atari5_estimate({game: mean for game in refs.ATARI5_GAMES})
  qbert = refs.human_normalised('Qbert', mean)
  assert f'| Qbert | {refs.return_text(mean)} (100) | {qbert:.1f}% |' in out
  assert f'{expected:.1f}%' in out
  assert 'Dopamine Rainbow 43.1%' in out and 'no sticky actions' in out
  # Only the episodes that ended by --frames count.
  result = atari5.report([atari5.reached(atari5.curve_of_file(paths[0]), 5_000_000)],
                         5_000_000)
  assert result.scores[0].score == pytest.approx(np.mean(np.arange(50, 150)))


def test_a_short_game_is_named_with_what_it_has_and_no_estimate_printed(tmp_path, capsys):
  paths = _five_curves(tmp_path, reach=7_300_000, short_game='Phoenix')
  assert atari5.main(['report'] + [f'--csv={p}' for p in paths]) == 1
  out = capsys.readouterr().out
  assert 'Phoenix:' in out and '7,300,000' in out and 'short of 10,000,000' in out
  assert 'No Atari-5 estimate' in out and 'Atari-5 estimate of' not in out

  paths = _five_curves(tmp_path, short_game='Qbert', short_episodes=12)
  assert atari5.main(['report'] + [f'--csv={p}' for p in paths]) == 1
  out = capsys.readouterr().out
  assert 'Qbert:' in out and 'has 12 episodes by 10,000,000 frames' in out
  assert 'at least 20' in out and 'No Atari-5 estimate' in out


def test_a_curve_file_of_several_runs_needs_a_label(tmp_path, capsys):
  path = tmp_path / 'learning_qbert.csv'
  _write_curve(path, 'V-trace', [1, 2], [0.0, 1.0])
  with open(path, 'a', newline='') as f:
    csv.writer(f).writerow(['PPO', 'run', 0, 3, 0, 5.0])
  assert atari5.main(['report', f'--csv={path}']) == 2
  assert "holds the runs ['PPO', 'V-trace']: choose one with --label" in capsys.readouterr().err
  assert atari5.curve_of_file(str(path), 'PPO').returns.tolist() == [5.0]


def test_run_directories_count_once_finished(tmp_path, capsys):
  root = tmp_path / 'atari5'
  for game in refs.ATARI5_GAMES:
    run_dir = root / atari5.run_name(game, 0)
    run_dir.mkdir(parents=True)
    with open(run_dir / 'episodes.csv', 'w') as f:
      f.write('env_frames,episode_return,episode_steps,wall_time_s\n')
      for i in range(150):
        f.write(f'{(i + 1) * 60_000},{i},100,{i}\n')
    if game != 'DoubleDunk':  # its learner has not reached the budget
      (run_dir / 'finished.json').write_text(json.dumps({'env_frames': 10_000_512,
                                                         'max_env_frames': 10_000_000}))
  assert atari5.main(['report', '--root', str(root)]) == 1
  out = capsys.readouterr().out
  assert 'DoubleDunk:' in out and 'trained 9,000,000 frames, short of 10,000,000' in out
  (root / atari5.run_name('DoubleDunk', 0) / 'finished.json').write_text(
      json.dumps({'env_frames': 10_000_512, 'max_env_frames': 10_000_000}))
  assert atari5.main(['report', '--root', str(root)]) == 0
  assert '| BattleZone | 99.5 (100) |' in capsys.readouterr().out
  # A game the suite has not reached yet has no run directory.
  shutil.rmtree(root / atari5.run_name('Qbert', 0))
  assert atari5.main(['report', '--root', str(root)]) == 1
  assert 'Qbert__seed=0 has no episodes yet, short of 10,000,000' in capsys.readouterr().out


def test_the_results_table_blanks_frames_a_run_did_not_reach_and_gives_atari5(tmp_path):
  from seed.experiments import atari_results  # pylint: disable=g-import-not-at-top
  entries = []
  for game in refs.ATARI5_GAMES + ('Pong',):
    reach = 7_000_000 if game == 'Pong' else 10_000_000
    frames = np.linspace(reach / 300, reach, 300).astype(int)
    _write_curve(tmp_path / f'learning_{game.lower()}.csv', 'V-trace', frames,
                 np.arange(300, dtype=float))
    entries.append({'agent': 'V-trace', 'game': game, 'config': 'vtrace.gin',
                    'csv': f'learning_{game.lower()}.csv', 'label': 'V-trace'})
  index = tmp_path / 'atari_results.json'
  index.write_text(json.dumps(entries))
  runs = [atari_results.load_run(e, str(tmp_path)) for e in atari_results.read_index(str(index))]
  pong = runs[-1]
  assert pong.mean_by(5_000_000) == pytest.approx(np.mean(np.arange(114, 214)))
  assert pong.mean_by(10_000_000) is None  # stopped at 7M
  assert pong.greedy is not None and pong.greedy.tolist() == [1e9]  # the last evaluation
  text = atari_results.table(runs)
  assert '| V-trace | Pong | vtrace.gin | 7.00M | 163.5 |  |  | 1,000,000,000 ± 0.0 (1) |' in text
  assert '| *RLlib IMPALA* | Qbert | published: training episodes, no sticky actions' in text
  at_10m = refs.atari5_estimate({g: np.mean(np.arange(200, 300)) for g in refs.ATARI5_GAMES})
  assert f'{at_10m:.1f}% at 10M (Dopamine DQN 10%, Dopamine Rainbow 43%, Dopamine IQN 68%)' in text
  assert 'Atari-5 estimate of the 57-game median human-normalised score, V-trace: ' in text
  docs = tmp_path / 'learning.md'
  docs.write_text(f'# x\n{atari_results.BEGIN}\n{text}\n{atari_results.END}\nmore\n')
  assert atari_results.main(['--index', str(index), '--check', str(docs)]) == 0
  docs.write_text(f'{atari_results.BEGIN}\n{text.replace("163.5", "163.4")}\n'
                  f'{atari_results.END}\n')
  assert atari_results.main(['--index', str(index), '--check', str(docs)]) == 1

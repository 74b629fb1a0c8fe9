"""`seed suite learning_curve`'s reading of episodes.csv across resumes."""
from seed.experiments.suites import learning_curve


def test_a_resume_drops_the_episodes_trained_away_and_adds_up_the_clocks(tmp_path):
  # Ran to 500 frames (40 s), resumed from its checkpoint at 300: the new learner's
  # clock starts at 0 and its first episode ends at 350.
  rows = [(100, 1, 10.0), (200, 2, 20.0), (300, 3, 30.0), (400, 4, 35.0), (500, 5, 40.0),
          (350, -3, 6.0), (450, -4, 12.0)]
  (tmp_path / 'episodes.csv').write_text(
      'env_frames,episode_return,episode_steps,wall_time_s\n' +
      ''.join(f'{frames},{ret},100,{wall_s}\n' for frames, ret, wall_s in rows))
  episodes = learning_curve.read_episodes(str(tmp_path))
  assert [e['frames'] for e in episodes] == [100, 200, 300, 350, 450]
  assert [e['return'] for e in episodes] == [1, 2, 3, -3, -4]
  assert [e['wall_s'] for e in episodes] == [10.0, 20.0, 30.0, 36.0, 42.0]

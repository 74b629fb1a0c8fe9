"""Every learning figure of the docs can be drawn again from data kept in docs/figures/
(`seed plot --save_data`; the DMC15 summary from its scores file), and that data loads."""
import glob
import os

import pytest

from seed.experiments import plotting
from tests.processes import REPO

DOCS = os.path.join(REPO, 'docs')
FIGURES = os.path.join(DOCS, 'figures')
# Figures drawn by a suite's report from a file of scores, not by seed plot.
FROM_SCORES = {'learning_dmc15_iqm.png': 'dmc15_scores.json'}


def _curve_figures():
  return sorted(os.path.basename(p) for p in glob.glob(os.path.join(DOCS, 'learning_*.png')))


def test_every_learning_figure_keeps_its_data():
  assert _curve_figures(), 'no learning figures found in docs/'
  missing = []
  for png in _curve_figures():
    data = FROM_SCORES.get(png, png[:-len('.png')] + '.csv')
    if not os.path.isfile(os.path.join(FIGURES, data)):
      missing.append(f'{png} (docs/figures/{data})')
  assert not missing, f'figures without their data: {", ".join(missing)}'


@pytest.mark.parametrize('path', sorted(glob.glob(os.path.join(FIGURES, '*.csv'))),
                         ids=os.path.basename)
def test_each_curve_file_loads(path):
  runs, _ = plotting.load_data(path)
  assert runs and all(len(seed.frames) for seeds in runs.values() for seed in seeds)


def test_the_atari_table_of_learning_md_is_the_one_its_data_gives():
  from seed.experiments import atari_results  # pylint: disable=g-import-not-at-top
  index = os.path.join(FIGURES, 'atari_results.json')
  assert atari_results.main(['--index', index, '--check',
                             os.path.join(DOCS, 'learning.md')]) == 0

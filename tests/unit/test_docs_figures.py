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


def test_performance_opens_with_a_dated_summary_each_figure_with_its_command_and_cpu():
  import re  # pylint: disable=g-import-not-at-top
  with open(os.path.join(DOCS, 'performance.md'), encoding='utf-8') as f:
    first = f.read().split('\n## ')[1]
  assert re.match(r'At a glance \(\d{4}-\d{2}-\d{2}\)\n', first), first[:80]
  assert len(first.splitlines()) <= 30, 'the summary should fit one screen'

  def cells(line):
    return [cell.strip() for cell in re.split(r'(?<!\\)\|', line.strip().strip('|'))]
  header = cells(next(line for line in first.splitlines() if line.startswith('| figure')))
  rows = [cells(line) for line in first.splitlines() if line.startswith('| **')]
  assert len(rows) >= 5, first
  for row in rows:
    named = dict(zip(header, row))
    # A command may start with environment variables (a CPU held to AVX2).
    assert re.search(r'`(?:[A-Z_]+=\S+ )*python -m bench\.\w+|the command in "',
                     named['command']), row
    assert re.fullmatch(r'\d{4}-\d{2}-\d{2}', named['measured']), row
    # Machines of one kind differ in the vector extensions a train step turns on.
    assert re.search(r'EPYC|Xeon', named['CPU']), row

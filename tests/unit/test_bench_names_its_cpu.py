"""Every benchmark's output names the CPU it was measured on (bench/hardware.py): hosts of
one kind differ (native bfloat16 or AVX2 only), and a figure without its CPU cannot be
compared. Read as text: tests never import bench."""
import os
import re

from tests.processes import REPO

BENCH = os.path.join(REPO, 'bench')
# Entry points that measure nothing: the CPU line itself, the peers' launcher and venvs.
NOT_BENCHMARKS = {'hardware.py', 'peer_launch.py', 'peer_venv.py'}


def test_every_benchmark_with_a_main_prints_the_cpu():
  missing = []
  for name in sorted(os.listdir(BENCH)):
    if not name.endswith('.py') or name in NOT_BENCHMARKS:
      continue
    with open(os.path.join(BENCH, name), encoding='utf-8') as f:
      text = f.read()
    if "__name__ == '__main__'" in text and not re.search(r'hardware\.describe\(\)', text):
      missing.append(name)
  assert missing == [], f'these benchmarks print no CPU line (bench.hardware.describe): {missing}'

"""Prints seed's pip requirements from setup.py, one a line: install_requires plus
the extras named on the command line.

The images install these in a layer of their own before copying the code, so a
code change does not reinstall TensorFlow. setup.py stays the one list.

  python setup_requirements.py SETUP_PY [EXTRA ...]
"""
import sys
import types


def requirements(setup_py, extras):
  captured = {}
  # A stand-in setuptools: setup.py only hands its arguments over.
  sys.modules['setuptools'] = types.SimpleNamespace(
      setup=captured.update, find_packages=lambda **kwargs: [])
  with open(setup_py) as f:
    exec(compile(f.read(), setup_py, 'exec'), {'__name__': '__main__'})  # pylint: disable=exec-used
  unknown = sorted(set(extras) - set(captured['extras_require']))
  if unknown:
    sys.exit(f'unknown extra(s) {unknown}; setup.py has {sorted(captured["extras_require"])}')
  return list(captured['install_requires']) + [
      r for extra in extras for r in captured['extras_require'][extra]]


if __name__ == '__main__':
  print('\n'.join(requirements(sys.argv[1], sys.argv[2:])))

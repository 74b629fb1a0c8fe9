"""Stands in for TensorFlow where a test checks that a refusal comes before it loads:
put tests/fakes/no_tensorflow first on PYTHONPATH, and importing it ends the process."""
raise SystemExit('tensorflow was imported (tests/fakes/no_tensorflow): the refusal came '
                 'after TensorFlow loaded')

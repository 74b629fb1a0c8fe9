"""The torsos' bfloat16 path (apply_torso's compute_dtype) against their float32 layers."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

import keras  # pylint: disable=g-import-not-at-top,g-bad-import-order

from seed.agents import torsos  # pylint: disable=g-import-not-at-top


def _layers(torso):
  seeds = iter(range(100))
  return torsos.build_torso_layers(
      torso, (32, 16), lambda: keras.initializers.GlorotUniform(seed=next(seeds)))


@pytest.mark.parametrize('torso, shape, dtype', [
    ('mlp', (5, 3), np.float32), ('nature', (4, 84, 84), np.uint8),
    ('impala_shallow', (4, 84, 84), np.uint8)])
def test_bfloat16_features_are_float32_and_within_its_rounding(torso, shape, dtype):
  layers = _layers(torso)
  rng = np.random.default_rng(0)
  observation = tf.constant(rng.integers(0, 256, (3,) + shape).astype(dtype) if dtype == np.uint8
                            else rng.normal(size=(3,) + shape).astype(dtype))
  want = torsos.apply_torso(layers, torso, shape, observation)
  got = torsos.apply_torso(layers, torso, shape, observation, compute_dtype='bfloat16')
  assert got.dtype == tf.float32 and got.shape == want.shape
  # 8 significant bits: about 0.4% a product, a few % through the layers.
  np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * float(tf.reduce_max(want)))
  assert not np.array_equal(got, want)


def test_bfloat16_gradients_reach_the_float32_variables():
  layers = _layers('nature')
  observation = tf.constant(np.random.default_rng(1).integers(0, 256, (2, 4, 84, 84)), tf.uint8)
  torsos.apply_torso(layers, 'nature', (4, 84, 84), observation)  # Builds the layers.
  variables = [v for layer in layers for v in layer.trainable_variables]
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(torsos.apply_torso(layers, 'nature', (4, 84, 84), observation,
                                            compute_dtype='bfloat16'))
  gradients = tape.gradient(loss, variables)
  assert all(v.dtype == tf.float32 for v in variables)
  assert all(g is not None and g.dtype == tf.float32 and float(tf.reduce_max(tf.abs(g))) > 0
             for g in gradients)


def test_a_layer_without_a_bfloat16_form_is_named():
  layers = [keras.layers.Dense(4), keras.layers.LayerNormalization(name='norm')]
  torsos.apply_torso(layers, 'mlp', (3,), tf.zeros([2, 3]))  # Builds the layers.
  with pytest.raises(TypeError, match="no bfloat16 form of the torso layer 'norm'"):
    torsos.apply_torso(layers, 'mlp', (3,), tf.zeros([2, 3]), compute_dtype='bfloat16')

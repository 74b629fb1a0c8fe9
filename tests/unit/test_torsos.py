"""The torsos: their bfloat16 path (apply_torso's compute_dtype) against their float32 layers,
image layouts, and each layer's output (torso_layer_outputs)."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

import keras  # pylint: disable=g-import-not-at-top,g-bad-import-order

from seed.agents.common import networks as shared  # pylint: disable=g-import-not-at-top


def _layers(torso):
  seeds = iter(range(100))
  return shared.build_torso_layers(
      torso, (32, 16), lambda: keras.initializers.GlorotUniform(seed=next(seeds)))


@pytest.mark.parametrize('torso, shape, dtype', [
    ('mlp', (5, 3), np.float32), ('nature', (4, 84, 84), np.uint8),
    ('impala_shallow', (4, 84, 84), np.uint8)])
def test_bfloat16_features_are_float32_and_within_its_rounding(torso, shape, dtype):
  layers = _layers(torso)
  rng = np.random.default_rng(0)
  observation = tf.constant(rng.integers(0, 256, (3,) + shape).astype(dtype) if dtype == np.uint8
                            else rng.normal(size=(3,) + shape).astype(dtype))
  want = shared.apply_torso(layers, torso, shape, observation)
  got = shared.apply_torso(layers, torso, shape, observation, compute_dtype='bfloat16')
  assert got.dtype == tf.float32 and got.shape == want.shape
  # 8 significant bits: about 0.4% a product, a few % through the layers.
  np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * float(tf.reduce_max(want)))
  assert not np.array_equal(got, want)


def test_bfloat16_gradients_reach_the_float32_variables():
  layers = _layers('nature')
  observation = tf.constant(np.random.default_rng(1).integers(0, 256, (2, 4, 84, 84)), tf.uint8)
  shared.apply_torso(layers, 'nature', (4, 84, 84), observation)  # Builds the layers.
  variables = [v for layer in layers for v in layer.trainable_variables]
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(shared.apply_torso(layers, 'nature', (4, 84, 84), observation,
                                            compute_dtype='bfloat16'))
  gradients = tape.gradient(loss, variables)
  assert all(v.dtype == tf.float32 for v in variables)
  assert all(g is not None and g.dtype == tf.float32 and float(tf.reduce_max(tf.abs(g))) > 0
             for g in gradients)


def test_a_layer_without_a_bfloat16_form_is_named():
  layers = [keras.layers.Dense(4), keras.layers.LayerNormalization(name='norm')]
  shared.apply_torso(layers, 'mlp', (3,), tf.zeros([2, 3]))  # Builds the layers.
  with pytest.raises(TypeError, match="no bfloat16 form of the torso layer 'norm'"):
    shared.apply_torso(layers, 'mlp', (3,), tf.zeros([2, 3]), compute_dtype='bfloat16')


@pytest.mark.parametrize('shape, torso', [
    ((4,), 'mlp'), ((10, 5), 'mlp'), ((4, 84, 84), 'nature'), ((84, 84, 4), 'nature'),
    ((96, 96, 3), 'nature'), ((10, 10, 4), 'small_conv'), ((4, 10, 10), 'small_conv'),
    ((7, 7, 3), 'small_conv'), ((2, 2, 3), 'mlp')])
def test_auto_picks_the_torso_from_the_observation_shape(shape, torso):
  assert shared.resolve_torso('auto', shape) == torso


def test_a_conv_torso_too_big_for_the_image_names_the_ones_that_fit():
  with pytest.raises(ValueError, match=r"torso='nature' needs image sides of at least 36, got "
                     r"\(10, 10\).*accepted for it: 'small_conv', 'mlp', or 'auto'"):
    shared.resolve_torso('nature', (10, 10, 4))
  with pytest.raises(ValueError, match=r"needs image observations, \[C, H, W\] or \[H, W, C\]"):
    shared.resolve_torso('small_conv', (16,))


@pytest.mark.parametrize('dtype', [np.uint8, np.bool_, np.float32])
def test_channels_last_images_give_the_features_of_their_channels_first_transpose(dtype):
  layers = _layers('small_conv')
  rng = np.random.default_rng(2)
  first = rng.integers(0, 2 if dtype == np.bool_ else 256, (3, 4, 10, 12)).astype(dtype)
  last = np.transpose(first, [0, 2, 3, 1])
  want = shared.apply_torso(layers, 'small_conv', (4, 10, 12), tf.constant(first))
  got = shared.apply_torso(layers, 'small_conv', (10, 12, 4), tf.constant(last))
  assert got.shape == (3, 128) and float(tf.reduce_max(want)) > 0
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
  if dtype == np.uint8:  # Scaled by 1/255 as frames are; bool and float cast as they are.
    np.testing.assert_allclose(
        want, shared.apply_torso(layers, 'small_conv', (4, 10, 12),
                                 tf.constant(first.astype(np.float32) / 255.0)), atol=1e-6)


@pytest.mark.parametrize('torso, shape', [('small_conv', (10, 12, 4)),
                                          ('nature', (4, 84, 84)), ('mlp', (5, 3))])
def test_each_layers_output_ends_in_the_torsos_features(torso, shape):
  layers = _layers(torso)
  observation = np.random.default_rng(3).integers(0, 256, (2,) + shape).astype(np.uint8)
  outputs = shared.torso_layer_outputs(layers, torso, observation)
  names = [layer.name for layer in layers if not isinstance(layer, keras.layers.Flatten)]
  assert [name for name, _ in outputs] == names
  np.testing.assert_array_equal(
      outputs[-1][1], shared.apply_torso(layers, torso, shape, tf.constant(observation)))
  # The first layer sees frames scaled by 1/255, channels last (the MLP: flattened).
  by_hand = observation.astype(np.float32) / 255.0
  if torso == 'mlp':
    by_hand = by_hand.reshape(2, -1)
  elif torso == 'nature':
    by_hand = np.transpose(by_hand, [0, 2, 3, 1])
  np.testing.assert_allclose(outputs[0][1], layers[0](by_hand), rtol=1e-6, atol=1e-6)

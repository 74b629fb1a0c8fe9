"""The torsos' first convolution with its kernel gradient as a forward convolution
(seed.agents.common.strided_conv) gives TensorFlow's own gradients."""
import numpy as np
import pytest
import tensorflow as tf

from seed.agents.common import networks
from seed.agents.common import strided_conv


@pytest.mark.parametrize('size,kernel,stride,channels', [
    ((84, 84), 8, 4, 4),    # the Nature and IMPALA torsos' first layer on Atari frames
    ((85, 87), 8, 4, 3),    # rows and columns past the last window
    ((12, 10), 4, 2, 2),
    ((9, 9), 3, 3, 1),
])
def test_kernel_gradient_is_tensorflows(size, kernel, stride, channels):
  rng = np.random.default_rng(0)
  x = tf.constant(rng.normal(size=(3, *size, channels)), tf.float32)
  k = tf.constant(rng.normal(size=(kernel, kernel, channels, 5)), tf.float32)
  dy = tf.ones_like(tf.nn.conv2d(x, k, stride, 'VALID'))
  dy = dy * tf.constant(rng.normal(size=dy.shape), tf.float32)
  expected = tf.raw_ops.Conv2DBackpropFilter(
      input=x, filter_sizes=k.shape, out_backprop=dy, strides=[1, stride, stride, 1],
      padding='VALID')
  got = strided_conv.kernel_gradient(x, dy, (kernel, kernel), stride)
  np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_valid_matches_autodiff_for_input_and_kernel():
  rng = np.random.default_rng(1)
  x = tf.constant(rng.normal(size=(2, 20, 20, 4)), tf.float32)
  k = tf.constant(rng.normal(size=(8, 8, 4, 6)), tf.float32)
  weights = tf.constant(rng.normal(size=(2, 4, 4, 6)), tf.float32)

  def gradients(conv):
    with tf.GradientTape() as tape:
      tape.watch([x, k])
      y = conv(x, k)
      loss = tf.reduce_sum(tf.nn.relu(y) * weights)
    return y, tape.gradient(loss, [x, k])

  y_ref, (dx_ref, dk_ref) = gradients(lambda x, k: tf.nn.conv2d(x, k, 4, 'VALID'))
  y, (dx, dk) = gradients(lambda x, k: strided_conv.conv2d_valid(x, k, 4))
  np.testing.assert_array_equal(y.numpy(), y_ref.numpy())
  np.testing.assert_allclose(dx.numpy(), dx_ref.numpy(), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(dk.numpy(), dk_ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('torso', ['nature', 'impala_shallow'])
def test_torso_gradients_are_the_layers_own(torso):
  """apply_torso's first layer (strided_conv) against calling every layer as Keras does."""
  initializer = lambda: tf.keras.initializers.Orthogonal(seed=3)  # pylint: disable=unnecessary-lambda-assignment
  layers = networks.build_torso_layers(torso, (), initializer)
  frames = tf.constant(np.random.default_rng(2).integers(0, 256, (3, 84, 84, 4)), tf.uint8)
  networks.apply_torso(layers, torso, (84, 84, 4), frames)  # builds the layers
  assert networks._is_strided_valid_conv(layers[0])  # pylint: disable=protected-access
  variables = [v for layer in layers for v in layer.trainable_variables]

  def gradients(apply):
    with tf.GradientTape() as tape:
      features = apply()
      loss = tf.reduce_sum(tf.square(features))
    return features, tape.gradient(loss, variables)

  def keras_layers():
    x = networks.torso_input(torso, (84, 84, 4), frames)
    for layer in layers:
      x = layer(x)
    return x

  expected_features, expected = gradients(keras_layers)
  features, got = gradients(lambda: networks.apply_torso(layers, torso, (84, 84, 4), frames))
  np.testing.assert_allclose(features.numpy(), expected_features.numpy(), rtol=1e-6, atol=1e-6)
  for g, e, v in zip(got, expected, variables):
    np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-3, atol=1e-3 * np.abs(e).max(),
                               err_msg=v.path)

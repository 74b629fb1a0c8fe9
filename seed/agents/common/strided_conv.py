"""A strided VALID convolution whose kernel gradient is computed as a forward convolution.

The Nature and IMPALA torsos open with an 8 x 8 convolution at stride 4 over 4 input
channels. On an AVX2-only CPU (AMD EPYC, 2 cores, no AVX-512) TensorFlow's kernel
gradient for it (`Conv2DBackpropFilter`, oneDNN's or Eigen's) ran at about 25 GFLOP/s,
a quarter of the forward convolution's rate: 68 of the 189 ms of a V-trace update on
256 frames. The same sum is a forward convolution with the batch and channel axes
swapped, the output gradient as its kernel and the stride as its dilation:

  dK[i, j, c, o] = sum_{n, h, w} x[n, s h + i, s w + j, c] dY[n, h, w, o]
                 = conv(x^T [c, H, W, n], dY^T [h, w, n, o], dilation s)[c, i, j, o]

which ran in 45 ms against 86 on that CPU, transposes included (docs/performance.md,
"The first layer's kernel gradient").
"""
import tensorflow as tf


def kernel_gradient(x: tf.Tensor, dy: tf.Tensor, kernel_size, stride: int) -> tf.Tensor:
  """The gradient of sum(conv2d(x, K, stride, 'VALID') * dy) with respect to K.

  x [N, H, W, C], dy [N, H', W', O] -> [kh, kw, C, O], as a forward convolution.
  """
  kh, kw = kernel_size
  x_t = tf.transpose(x, [3, 1, 2, 0])       # [C, H, W, N]: the channels as the batch
  dy_t = tf.transpose(dy, [1, 2, 0, 3])     # [H', W', N, O]: the output gradient as the kernel
  # Rows and columns past the last window do not reach any output: crop them so the
  # dilated kernel's output is exactly kh x kw.
  rows = (tf.shape(dy)[1] - 1) * stride + kh
  cols = (tf.shape(dy)[2] - 1) * stride + kw
  x_t = x_t[:, :rows, :cols, :]
  grad = tf.nn.conv2d(x_t, dy_t, strides=1, padding='VALID', dilations=stride)
  return tf.transpose(grad, [1, 2, 0, 3])    # [kh, kw, C, O]


def conv2d_valid(x: tf.Tensor, kernel: tf.Tensor, stride: int) -> tf.Tensor:
  """tf.nn.conv2d(x, kernel, stride, 'VALID') (NHWC), with the kernel's gradient from
  `kernel_gradient` and the input's from TensorFlow's own op."""

  @tf.custom_gradient
  def conv(x, kernel):
    y = tf.nn.conv2d(x, kernel, strides=stride, padding='VALID')

    def grad(dy):
      # Unused under tf.function when x is the observation: the graph prunes it.
      dx = tf.raw_ops.Conv2DBackpropInput(
          input_sizes=tf.shape(x), filter=kernel, out_backprop=dy,
          strides=[1, stride, stride, 1], padding='VALID')
      return dx, kernel_gradient(x, dy, kernel.shape[:2], stride)

    return y, grad

  return conv(x, kernel)

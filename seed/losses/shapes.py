"""Shape checks shared by the loss modules."""


def check_same_shapes(**tensors) -> None:
  """Raises ValueError unless every tensor's static shape matches the first one's."""
  (first_name, first), *rest = tensors.items()
  for name, tensor in rest:
    if not tensor.shape.is_compatible_with(first.shape):
      raise ValueError(f'{name} has shape {tensor.shape}, expected the shape of '
                       f'{first_name} {first.shape}.')

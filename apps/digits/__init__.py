"""An int8 digit classifier end to end: scikit-learn's bundled digits, trained in numpy, run on VTA.

    python -m apps.digits [--net mlp|cnn] [--rtl N]     # train, quantize, print accuracies (and RTL cycles)

The data is ``sklearn.datasets.load_digits`` (1797 8x8 images, pixel values 0-16, shipped with
scikit-learn, no download). A fixed permutation (seed :data:`SPLIT_SEED`) holds out 360 test images.

Two networks, trained deterministically in float64 numpy (fixed seed, mini-batch Adam written here):

* ``mlp``: 64 -> dense 64 + ReLU -> dense 10
* ``cnn``: 1x8x8 -> conv 3x3, 16 channels, pad 1 + ReLU -> flatten 1024 -> dense 10

Post-training quantization to VTA's arithmetic (the definition is :func:`reference`):

* input: ``x_q = 7 * pixel`` (int8 in [0, 112], exact: the float model sees ``pixel / 16``);
* hidden layers (dense or conv2d): int8 weights, int32 accumulation, ``>> shift``, ``+ bias``
  (int32, in output units), clip to [0, 127], int8 -- exactly :func:`sw.ops.dense` /
  :func:`sw.ops.conv2d`;
* the readout (last dense layer): exact int32 logits, ``W_q . h + b`` with the bias in accumulator
  units; the prediction is the argmax (first index on ties).

:func:`run` executes a quantized network through :mod:`sw.ops` on the current runtime target (the
golden model by default; the ``rtl`` runner of :mod:`sw.runtime.runners` runs the same function on the RTL) and
returns the logits and the summed counters, whose ``cycles`` (on the RTL) give cycles per image.
Nothing is cached on disk; :func:`model` memoises trained networks in the process only.

The modules, by role: :mod:`.data` (the images, the split, the int8 input), :mod:`.training` (the float
networks and their training), :mod:`.quantization` (:class:`QuantNet` and the quantization), :mod:`.inference`
(the numpy definition and the run on the runtime), :mod:`.trained` (a trained, quantized, scored network),
``__main__`` (the command line).
"""

from .data import INPUT_SCALE, N_TEST, SPLIT_SEED, load_data, quantize_input
from .inference import accuracy, add_counters, predict, reference, run
from .quantization import Layer, QuantNet, describe, quantize
from .trained import Model, model
from .training import NETS, float_forward, train

__all__ = ["load_data", "train", "quantize", "quantize_input", "float_forward", "reference", "run",
           "predict", "accuracy", "model", "add_counters", "describe", "Layer", "QuantNet", "Model", "NETS", "INPUT_SCALE",
           "SPLIT_SEED", "N_TEST"]

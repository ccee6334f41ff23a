"""TVM 0.27 (Relax) with this accelerator: any int8 QDQ ONNX model compiled by TVM, its quantized layers on VTA.

Needs the ``tvm`` extra (``pip install -e '.[tvm]'``, which ``make`` installs).

    python -m apps.tvm_vta MODEL.onnx [--config F] [--target fsim|rtl|board] [--input F] [--export F.so]

    from apps.tvm_vta import compile_model
    c = compile_model("model.onnx", "configs/default.json")    # from_onnx, partition, tvm.compile
    print(c.partition.table())                                  # each layer: VTA or TVM's CPU code, and why
    c.export("model.so")                                        # then, in any process:
    from apps.tvm_vta import runtime                            #   registers the vta.qdq.* functions
    outputs, trace = runtime.run_library("model.so", [x])       #   on the current target (fsim, rtl, board)

The flow (:mod:`.flow`): TVM's own ONNX front end (``tvm.relax.frontend.onnx.from_onnx``) imports the model in
QDQ form (``R.quantize`` / ``R.dequantize`` around float operators); :mod:`.patterns` matches each
dequantize -> conv2d / conv2d_transpose / matmul (a weight or two activations) / add -> quantize chain with Relax
dataflow patterns and replaces the chains the accelerator takes by ``R.call_dps_packed`` of the tvm-ffi functions
``vta.qdq.*`` (:mod:`.runtime`), with the layer's spec (JSON) and the model's own constants as arguments; TVM
compiles everything else for the CPU (``tvm.compile(mod, "llvm")``). The offloaded functions build and prepare the
ONNX importer's layer (:mod:`apps.onnx`: one definition of the requantization) from those constants at their first
call and run it through the importer's runner on the current runtime target. Nothing but the constants and the
specs is in the exported library, so a fresh process that imports :mod:`apps.tvm_vta.runtime` runs it.

:mod:`.digits` is the earlier, hand-written offload of the digits classifiers (integer Relax graphs, no ONNX).
"""

from importlib import import_module

_WHERE = {**dict.fromkeys(("relax_module", "offload", "build", "run", "run_digits", "calls", "register",
                           "UnsupportedError", "FUNCTIONS"), "digits"),
          **dict.fromkeys(("compile_model", "Compiled", "TvmRun", "input_shapes", "compare"), "flow"),
          **dict.fromkeys(("partition", "Partition", "Row", "PATTERNS"), "patterns")}

__all__ = list(_WHERE)


def __getattr__(name: str):
    """The package's names, imported on first use: a process that runs an exported library imports only
    :mod:`apps.tvm_vta.runtime`, not TVM's compiler."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)

"""Reading ONNX protos: a checked model, a node's attributes, a tensor's values."""

from __future__ import annotations

from .ir import OnnxImportError

__all__ = ["read_model", "attrs_of", "to_array"]


def to_array(tensor):
    from onnx import numpy_helper
    return numpy_helper.to_array(tensor)


def attrs_of(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def read_model(model):
    """A path or ``onnx.ModelProto`` -> a checked ``onnx.ModelProto`` (OnnxImportError otherwise)."""
    import onnx

    if not isinstance(model, onnx.ModelProto):
        try:
            model = onnx.load(str(model))
        except Exception as e:  # noqa: BLE001 - protobuf raises several types for a damaged file
            raise OnnxImportError(f"{model}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise OnnxImportError(f"the model is malformed: {str(e).splitlines()[0]}") from None
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx") and imp.version < 13:
            raise OnnxImportError(f"opset {imp.version}; the import needs opset >= 13 (onnx.version_converter "
                                  f"converts older models)")
    return model

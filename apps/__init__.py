"""What users run on top of the runtime: networks, model import, the TVM offload and the demos."""

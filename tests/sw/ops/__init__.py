from dataclasses import replace

from sw.config import load_config

ALU_ONLY = replace(load_config("default"), POST_UNIT=0, name="default-alu")
"""The default config without the post-processing unit: every epilogue step an ALU instruction."""

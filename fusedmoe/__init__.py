"""fusedmoe: fused Mixture-of-Experts kernels for LLM inference on NVIDIA Hopper."""

from .api import PATHS, choose_path, fused_moe
from .routing import route
from .weights import FORMATS, ExpertWeights

__all__ = ["PATHS", "FORMATS", "ExpertWeights", "choose_path", "fused_moe", "route"]
__version__ = "0.1.0"

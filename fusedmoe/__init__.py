"""fusedmoe: fused Mixture-of-Experts kernels for LLM inference on NVIDIA Hopper."""

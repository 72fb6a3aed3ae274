"""Graph passes: rewrites of an ExportedProgram before AOTInductor compiles it.

  outputs.py             what the library returns (the output contract) and the graph
                         that returns exactly that; parameter writes removed
  projection_fusion.py   linears reading one input become one product (compile spec
                         ``fuse_projections``)
  norm_linear_fusion.py  RMSNorm + linear become Kiln's fused op (``fuse_norm_linear``)
  grouped_mm.py          Mixture-of-Experts grouped products become Kiln's op kiln::grouped_mm
                         (``grouped_mm``, on by default)
  conv_decomposition.py  convolutions as im2col + matmul, for Triton-only CUDA libraries
  conv_weight_layout.py  CPU: convolution weights stored channels-last, as the compiled code
                         reads them (always on)

Backends (kiln.exporter.backends) choose which passes run.
"""

"""Performance on the RTL: co-simulation speed, operator benchmarks and timelines (``make bench``).

``bench`` (launch time and cycles per second, against ``harness``: the same model in a plain C++ main
loop), ``long_gemm`` (the program both run), ``workloads`` (MAC utilization and roofline of every
operator benchmark), ``timeline`` (when each module was busy, as a picture).
"""

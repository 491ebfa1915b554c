"""A labelled corpus of real small training runs (see README.md).

The matrices here are tiny; multi-threaded BLAS only slows them down (by 10x or more), so the package
pins BLAS to one thread when it is imported before numpy.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

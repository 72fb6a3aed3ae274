"""Imports every module of op cases, registering them in op_case.CASES."""

import cases_attention  # noqa: F401
import cases_convolution  # noqa: F401
import cases_matmul  # noqa: F401
import cases_scan  # noqa: F401
import cases_random  # noqa: F401
import cases_sort  # noqa: F401
import cases_linalg  # noqa: F401
import cases_pool  # noqa: F401
import cases_index  # noqa: F401
import cases_complex  # noqa: F401
import cases_rnn  # noqa: F401

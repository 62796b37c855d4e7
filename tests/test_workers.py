"""`make test` and `make check` run pytest-xdist workers that each compute on one thread
(conftest.py), so two workers on two cores do not fight over them."""

import os

import pytest


@pytest.mark.skipif(not os.environ.get("PYTEST_XDIST_WORKER"), reason="holds only for a pytest-xdist worker")
def test_a_worker_its_blas_and_its_torch_compute_on_one_thread():
    import numpy  # noqa: F401 (its BLAS pool, as the tests use it)
    import torch
    from threadpoolctl import threadpool_info

    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas), blas
    assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"

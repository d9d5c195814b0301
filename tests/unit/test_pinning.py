"""Which CPU ``host serve --pin-workers`` gives a new worker."""

from __future__ import annotations

from host.serve.pinning import choose_cpu


def test_workers_spread_over_the_cpus_fewest_first() -> None:
    assert choose_cpu({0, 1, 2}, []) == 0
    assert choose_cpu({0, 1, 2}, [0]) == 1
    assert choose_cpu({0, 1, 2}, [0, 1, 2, 0]) == 1
    assert choose_cpu({0, 1}, [0, 1, 0, 1]) == 0  # more workers than CPUs: they share, evenly


def test_a_gone_workers_cpu_is_the_next_ones() -> None:
    assert choose_cpu({0, 1, 2, 3}, [0, 1, 3]) == 2


def test_only_the_cpus_the_master_may_use() -> None:
    assert choose_cpu({4, 6}, []) == 4
    assert choose_cpu({4, 6}, [0, 0, 4, -1]) == 6  # a CPU it may not use, or none, counts for none

"""The tasks of a run or session (core/tasks.py) on the stub domain's seeded stream:
what the core relies on of a TaskSource, and the candidates informative task choice is
offered. TidyUP's own generator is tested in test/domains/tidyup/test_tidyup_tasks.py."""

from __future__ import annotations

import pytest

from cecm_ros.core.tasks import (
    CANDIDATE_SEED_OFFSET,
    TaskSequence,
    candidate_generator,
    heldout_seed,
)


def test_the_same_seed_gives_the_same_tasks_one_at_a_time_or_in_a_batch(errands):
    domain, _ = errands
    first = domain.task_generator(42).tasks(6)
    assert first == domain.task_generator(42).tasks(6)
    generator = domain.task_generator(42)
    assert [generator.next_task() for _ in range(6)] == first
    assert len({task.task_id for task in first}) == 6
    keys = {seed: tuple(t.key for t in domain.task_generator(seed).tasks(4))
            for seed in range(6)}
    assert len(set(keys.values())) == len(keys)   # other seeds, other tasks


def test_candidates_come_from_a_stream_of_their_own(errands):
    domain, _ = errands
    spare = candidate_generator(domain, 7).tasks(3)
    assert spare == domain.task_generator(7 + CANDIDATE_SEED_OFFSET).tasks(3)
    assert spare != domain.task_generator(7).tasks(3)
    # The held-out pool's seed is far from every run's seed and from the candidates'.
    assert heldout_seed(7) == 2**31 - 1 - 7
    assert len({heldout_seed(s) for s in range(100)} | set(range(100))) == 200


def test_the_first_candidate_is_always_the_task_the_given_order_runs(errands):
    domain, _ = errands
    given = domain.task_generator(3).tasks(4)
    spare = candidate_generator(domain, 3).tasks(8)
    for choose in (0, 2):
        sequence = TaskSequence(domain, seed=3, count=4, candidates=3)
        assert len(sequence) == 4
        firsts, taken = [], []
        for step in range(4):
            offered = sequence.offer()
            assert len(offered) == 3 and sequence.offer() == offered   # until taken
            assert offered[1:] == spare[2 * step:2 * step + 2]
            firsts.append(offered[0])
            taken.append(sequence.take(choose))
            assert taken[-1] == offered[choose]
        # Choosing never changes what the given order runs.
        assert firsts == given


def test_a_list_of_tasks_is_offered_in_order_and_each_is_run_once(errands):
    domain, _ = errands
    tasks = domain.task_generator(5).tasks(4)
    sequence = TaskSequence(domain, seed=5, tasks=tasks, candidates=2)
    assert len(sequence) == 4
    assert sequence.offer() == tasks[:2]
    assert sequence.take(1) == tasks[1]
    assert sequence.offer() == [tasks[0], tasks[2]]
    assert sequence.take(0) == tasks[0]
    assert sequence.offer() == tasks[2:]
    assert sequence.take(1) == tasks[3]
    assert sequence.offer() == [tasks[2]]       # fewer left than candidates
    assert sequence.take(0) == tasks[2]
    assert sequence.offer() == []
    single = TaskSequence(domain, seed=5, tasks=tasks)
    assert [single.take(0) for _ in range(4)] == tasks


def test_a_sequence_needs_a_count_or_a_list_and_a_candidate(errands):
    domain, _ = errands
    with pytest.raises(ValueError, match='candidates must be at least 1'):
        TaskSequence(domain, seed=0, count=2, candidates=0)
    with pytest.raises(ValueError, match='either a count'):
        TaskSequence(domain, seed=0)
    with pytest.raises(ValueError, match='either a count'):
        TaskSequence(domain, seed=0, count=2, tasks=[])

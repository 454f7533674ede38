"""The tasks of a run or session: a domain's seeded stream, given or offered as
candidates."""

from __future__ import annotations

from .domain import Domain, Task, TaskSource

# Informative task choice draws its extra candidates from a second generator whose seed
# is the run's plus this, so that the given sequence stays the same with either choice.
CANDIDATE_SEED_OFFSET = 50_000_017


def heldout_seed(seed: int) -> int:
    """The seed of the held-out pool of an experiment or session with seed ``seed``:
    far from every run's own task seed."""
    return 2**31 - 1 - seed


def candidate_generator(domain: Domain, seed: int) -> TaskSource:
    """The generator of the extra candidates of a run with seed ``seed``."""
    return domain.task_generator(seed + CANDIDATE_SEED_OFFSET)


class TaskSequence:
    """The tasks of a session or run, given in order or offered as candidates.

    ``offer()`` returns the next candidates; the first is always the task the given
    order runs next, so choosing among them never changes what the given order runs.
    With a generator the other ``candidates - 1`` come from :func:`candidate_generator`;
    with a list the candidates are the next remaining tasks of the list, and every task
    of the list is run once. ``take(i)`` then consumes candidate ``i``.
    """

    def __init__(self, domain: Domain, seed: int, count: int | None = None,
                 tasks: list[Task] | None = None, candidates: int = 1):
        if candidates < 1:
            raise ValueError(f'candidates must be at least 1, got {candidates}')
        if (count is None) == (tasks is None):
            raise ValueError('give either a count of generated tasks or a list of tasks')
        self.remaining = list(tasks) if tasks is not None else None
        self.count = len(tasks) if tasks is not None else int(count or 0)
        self.generator = domain.task_generator(seed)
        self.spare = candidate_generator(domain, seed)
        self.candidates = candidates
        self._offered: list[Task] | None = None

    def __len__(self) -> int:
        return self.count

    def offer(self) -> list[Task]:
        if self._offered is None:
            if self.remaining is not None:
                self._offered = self.remaining[:self.candidates]
            else:
                self._offered = [self.generator.next_task()] + \
                    self.spare.tasks(self.candidates - 1)
        return list(self._offered)

    def take(self, index: int) -> Task:
        offered = self.offer()
        task = offered[index]
        if self.remaining is not None:
            self.remaining.remove(task)
        self._offered = None
        return task

"""A search that times out never ends a run: the update of that task keeps the belief
as it was (never a partial one), the run goes on and says what happened."""

from __future__ import annotations

from stub_domain import Errands, ErrandsPlanner

from cecm_ros.core.errors import PlannerTimeoutError
from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.experiments.experiment import ExperimentSettings, run_once


class SlowOnOneTask(ErrandsPlanner):
    """Times out whenever several hypotheses of one task are planned (an update), and
    plans everything else."""

    def __init__(self, domain, slow_task: str):
        super().__init__(domain)
        self.slow_task = slow_task

    def solve_all(self, task, vectors):
        if task.task_id == self.slow_task and len(vectors) > 1:
            raise PlannerTimeoutError(f'task {task.task_id}: search timed out (test)')
        return super().solve_all(task, vectors)


def test_an_update_that_times_out_keeps_the_belief_and_the_run_goes_on():
    domain = Errands()
    settings = ExperimentSettings(partner='low_capability', runs=1, tasks=4, seed=3, jobs=1,
                                  estimator=EstimatorSettings(samples=100,
                                                              likelihood='kernel'),
                                  heldout=0)
    said = []
    with ErrandsPlanner(domain) as planner:
        reference = run_once(domain, planner, settings, 0)
    slow_task = reference[1].task_id
    with SlowOnOneTask(domain, slow_task) as planner:
        results = run_once(domain, planner, settings, 0, report=said.append)
    assert [r.task_id for r in results] == [r.task_id for r in reference]
    assert results[1].theta == results[0].theta            # nothing learnt from it
    assert results[1].accepted_samples == 0
    assert 'update not finished' in results[1].update_message
    assert any('update not finished' in line and 'timed out' in line for line in said)
    assert reference[1].theta != reference[0].theta       # where it would have learnt


class SlowOnHeldOut(ErrandsPlanner):
    """Times out on every held-out task's single plan (the open-loop metric)."""

    def __init__(self, domain, heldout_ids):
        super().__init__(domain)
        self.heldout_ids = set(heldout_ids)

    def solve_all(self, task, vectors):
        if task.task_id in self.heldout_ids:
            raise PlannerTimeoutError(f'task {task.task_id}: search timed out (test)')
        return super().solve_all(task, vectors)


def test_a_held_out_metric_that_times_out_is_left_empty_and_summed_over_the_rest():
    from cecm_ros.experiments.experiment import split_tasks, summarise

    class FewErrands(Errands):
        """Errands with a small task universe: a run learns on some, the rest are held
        out (as in a domain with few tasks, Overcooked)."""

        def task_universe(self):
            return Errands().task_generator(0).tasks(5)

    domain = FewErrands()
    settings = ExperimentSettings(partner='low_capability', runs=1, tasks=2, seed=3, jobs=1,
                                  estimator=EstimatorSettings(samples=60,
                                                              likelihood='kernel'),
                                  heldout=0)
    _, heldout = split_tasks(domain, 3, settings.tasks)
    assert len(heldout) == 3
    said = []
    with SlowOnHeldOut(domain, [t.task_id for t in heldout]) as planner:
        results = run_once(domain, planner, settings, 0, report=said.append)
    assert len(results) == 2                                  # the run went on
    assert all(r.heldout_feasible != r.heldout_feasible for r in results)   # nan
    assert any('held-out feasibility not measured' in line for line in said)
    with ErrandsPlanner(domain) as planner:
        measured = run_once(domain, planner, settings, 1)
    summary = summarise(settings, results + measured, 1.0, domain)
    first = summary['per_task'][0]['heldout_feasible']
    assert first['measured_runs'] == 1
    assert first['mean'] == measured[0].heldout_feasible

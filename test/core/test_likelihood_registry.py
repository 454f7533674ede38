"""The likelihood registry on the stub domain: a likelihood is a LikelihoodModel subclass
that declares its name and what it takes; registered, the settings, the estimator, the
CLI and sweep files accept it, and its declarations (lapse rule, plan sets, glitches)
are what the checks read, for the built-in ones as for a new one."""

from __future__ import annotations

import numpy as np
import pytest

from cecm_ros.core import likelihood as registry
from cecm_ros.core import metrics
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.likelihood import (
    KernelLikelihoodModel,
    LikelihoodModel,
    likelihood_model,
    likelihood_names,
    register_likelihood,
)
from cecm_ros.core.partners import RobotTeammate, SimulatedHuman, partner_seed, run_shared_task


class TemperedKernel(KernelLikelihoodModel):
    """A tempered (power) likelihood: each task's kernel log-likelihood times 1/2, so
    that a partner whom no hypothesis predicts well moves the belief half as far."""

    name = 'tempered_kernel'
    summary = "the kernel's log-likelihood times 1/2"
    reads_plan_sets = False

    def log_likelihood(self, task, vectors, observed):
        return 0.5 * super().log_likelihood(task, vectors, observed)


@pytest.fixture
def tempered():
    register_likelihood(TemperedKernel)
    yield TemperedKernel
    registry._registered.pop(TemperedKernel.name, None)


@pytest.fixture(scope='module')
def errands():
    from stub_domain import Errands, ErrandsPlanner

    domain = Errands()
    with ErrandsPlanner(domain) as planner:
        yield domain, planner


def test_every_built_in_name_is_its_class():
    assert likelihood_names() == ('kernel', 'stepwise', 'fitted_stepwise', 'usage',
                                  'indicator')
    for name in likelihood_names():
        model = likelihood_model(name)
        assert issubclass(model, LikelihoodModel) and model.name == name and model.summary
    # What the checks read, from the classes' own declarations.
    assert likelihood_names(reads_plan_sets=True) == ('kernel', 'usage', 'indicator')
    assert likelihood_names(softens_misperception=True) == ('kernel', 'stepwise', 'usage')
    assert likelihood_names(lapse_rule='slip') == ('stepwise', 'usage')


def test_a_registered_likelihood_is_learned_with(errands, tempered):
    domain, planner = errands
    truth = domain.catalog.resolve('low_capability')
    settings = EstimatorSettings(samples=200, likelihood='tempered_kernel')
    estimator = make_estimator('cecm', domain, evaluator_for('cecm', planner), settings,
                               seed=7)
    assert type(estimator.likelihood_model) is TemperedKernel
    before = metrics.hamming(estimator.estimate, truth)
    for task in domain.task_generator(3).tasks(4):
        human = SimulatedHuman(planner, truth, seed=partner_seed(3, task.task_id))
        record = run_shared_task(domain, task, RobotTeammate(planner, estimator.estimate),
                                 human)
        estimator.update(task, record.trajectory)
    assert before > 0 and metrics.hamming(estimator.estimate, truth) == 0.0
    # Half the kernel's weight on a task the truth cannot explain as well as another.
    task = domain.task_generator(11).next_task()
    observed = planner.plan(task, truth).trajectory
    vectors = np.array([truth, ~truth])
    form = settings.for_domain(domain).likelihood_form()
    kernel = KernelLikelihoodModel(form, [evaluator_for('cecm', planner)],
                                   domain.exercised_capabilities)
    halved = TemperedKernel(form, [evaluator_for('cecm', planner)],
                            domain.exercised_capabilities)
    np.testing.assert_allclose(halved.log_likelihood(task, vectors, observed),
                               0.5 * kernel.log_likelihood(task, vectors, observed))


def test_the_cli_and_sweep_files_offer_a_registered_likelihood(tempered, tmp_path):
    from cecm_ros.cli.main import build_parser
    from cecm_ros.domains import load_domain
    from cecm_ros.experiments.sweep import load_sweep

    args = build_parser().parse_args(['experiment', '--likelihood', 'tempered_kernel'])
    assert args.likelihood == 'tempered_kernel'
    path = tmp_path / 'sweep.yaml'
    path.write_text('name: t\nfixed: {runs: 1, tasks: 1}\n'
                    'grid: {likelihood: [tempered_kernel, kernel]}\n')
    assert len(load_sweep(path, load_domain).cells) == 2
    path.write_text('name: t\nfixed: {runs: 1, tasks: 1, likelihood: nonesuch}\n')
    with pytest.raises(ConfigError, match='likelihood must be one of .*tempered_kernel'):
        load_sweep(path, load_domain)


def test_the_declarations_are_what_the_settings_check(errands, tempered):
    domain, planner = errands
    with pytest.raises(ConfigError, match='stepwise likelihood needs a lapse in'):
        EstimatorSettings(likelihood='stepwise', lapse=0.6)
    EstimatorSettings(likelihood='tempered_kernel', lapse=0.6)   # the kernel's rule: any
    with pytest.raises(ConfigError, match="cannot weigh a glitch; use one of kernel, "
                                          "stepwise, usage, tempered_kernel"):
        EstimatorSettings(likelihood='indicator', misperception=0.05)
    with pytest.raises(ConfigError, match='compares with one plan; choose a likelihood '
                                          'that reads the sets: kernel, usage, indicator'):
        make_estimator('cecm_div', domain, evaluator_for('cecm_div', planner),
                       EstimatorSettings(samples=10, likelihood='tempered_kernel'))
    with pytest.raises(ConfigError, match="unknown likelihood 'nonesuch'; choose one of "
                                          'kernel, stepwise'):
        likelihood_model('nonesuch')


def test_a_likelihood_that_cannot_be_registered_says_why(tempered):
    class Unnamed(KernelLikelihoodModel):
        name = ''

    class Clash(KernelLikelihoodModel):
        name = 'usage'

    class Twin(KernelLikelihoodModel):
        name = 'tempered_kernel'

    class OddLapse(KernelLikelihoodModel):
        name = 'odd_lapse'
        lapse_rule = 'sometimes'

    for model, message in ((Unnamed, 'needs a name that is an identifier'),
                           (Clash, "name 'usage' is taken"),
                           (Twin, "name 'tempered_kernel' is taken"),
                           (OddLapse, 'lapse_rule must be one of any, slip, none, fitted'),
                           (dict, 'is not a LikelihoodModel subclass')):
        with pytest.raises(ConfigError, match=message):
            register_likelihood(model)
    assert register_likelihood(TemperedKernel) is TemperedKernel   # again: the same class

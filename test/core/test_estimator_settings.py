"""The estimator's settings are declared once (core/estimator_settings.py) and every face
is made from that: the checks, the `cecm` options, sweep keys, the node's parameters and
their open values, a domain file's `likelihood:` section. A setting added to the schema
appears in all of them; what is left open is filled in in one place."""

from __future__ import annotations

from dataclasses import fields

import pytest

from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator_settings import (
    SECTION_KEYS,
    SETTINGS,
    EstimatorSettings,
    likelihood_section,
    settings_from_values,
)
from cecm_ros.session.estimator_parameters import (
    NODE_PARAMETERS,
    parameter_range,
    parameters_from_values,
    settings_from_parameters,
)

# The node's parameters as the graph, its launch files and recorded sessions know them:
# a change here changes what a parameters file means.
WIRE_DEFAULTS = {
    'inference': 'posterior', 'samples': 500, 'prior': 0.8, 'epsilon': 0.0, 'psi': 0.5,
    'undecided': 'analogy', 'sweeps': 4, 'coupling': 0.0, 'alike_rooms': 0.0, 'window': -1,
    'decay': 0.0, 'proposal': '', 'proposal_floor': 0.05, 'likelihood': '', 'lapse': -1.0,
    'bandwidth': -1.0, 'likelihood_seeds': 0, 'known_mass': 0.99, 'misperception': 0.0}

# What users give, and what each face must make of it alike.
GIVEN = [
    {},
    {'inference': 'paper', 'samples': 100},
    {'inference': 'sequential', 'window': 0},            # 0: the preset's window switched off
    {'inference': 'sequential', 'window': 3},
    {'inference': 'paper', 'decay': 0.5},
    {'likelihood': 'stepwise', 'lapse': 0.1, 'epsilon': 0.3},
    {'likelihood': 'kernel', 'bandwidth': 0.0, 'likelihood_seeds': 3, 'known_mass': 0.95},
    {'undecided': 'cautious', 'alike_rooms': 2.0, 'misperception': 0.05,
     'likelihood': 'usage'},
]


def test_every_field_is_declared_and_the_wire_defaults_hold():
    assert list(SETTINGS) == [f.name for f in fields(EstimatorSettings)]
    for name, spec in SETTINGS.items():
        assert spec.name == name and spec.help and spec.type in (int, float, str)
    assert NODE_PARAMETERS == WIRE_DEFAULTS
    assert all(type(NODE_PARAMETERS[n]) is type(WIRE_DEFAULTS[n]) for n in WIRE_DEFAULTS)
    assert SECTION_KEYS == {'form': 'likelihood', 'lapse': 'lapse', 'bandwidth': 'bandwidth',
                            'seeds': 'likelihood_seeds'}
    # The node's range lets the open value in; the choices have '' where it is open.
    assert parameter_range(SETTINGS['window']) == {'low': -1}
    assert parameter_range(SETTINGS['lapse']) == {'low': -1.0, 'high': 1.0}
    assert parameter_range(SETTINGS['proposal'])['choices'] == ('', 'prior', 'belief')


@pytest.mark.parametrize('given', GIVEN, ids=lambda g: ','.join(f'{k}={v}' for k, v in
                                                            g.items()) or 'nothing')
def test_the_cli_the_node_and_sweeps_make_the_same_settings(given, tmp_path):
    from cecm_ros.cli.main import build_parser
    from cecm_ros.domains import load_domain
    from cecm_ros.experiments.sweep import load_sweep
    from cecm_ros.tools.options import estimator_settings, option_name

    expected = settings_from_values(given, default_epsilon=0.24)
    # The estimator node, from the parameters the demo and launch files would set.
    assert settings_from_parameters(parameters_from_values(given), 0.24) == expected
    # `cecm experiment` with the options of the same names.
    argv = ['experiment']
    for name, value in given.items():
        argv += [option_name(name), str(value)]
    args = build_parser().parse_args(argv)
    assert estimator_settings(args, load_domain('tidyup')) == expected
    # A sweep file's keys of the same names.
    path = tmp_path / 'sweep.yaml'
    lines = ''.join(f'  {name}: {value}\n' for name, value in given.items())
    path.write_text(f'name: t\nfixed:\n  runs: 1\n  tasks: 1\n{lines}')
    assert load_sweep(path, load_domain).cells[0].settings.estimator == expected


def test_what_is_left_open_is_filled_in_once():
    settings = settings_from_values({'inference': 'sequential'})
    assert (settings.window, settings.proposal, settings.epsilon) == (1, 'belief', 0.24)
    assert settings_from_values({}, default_epsilon=0.03).epsilon == 0.03
    assert settings_from_values({'epsilon': 0.1}, default_epsilon=0.03).epsilon == 0.1
    assert settings_from_values({'likelihood': None}).likelihood is None   # the domain's
    with pytest.raises(ConfigError, match=r"unknown estimator settings \['lapsus'\]"):
        settings_from_values({'lapsus': 0.1})


@pytest.mark.parametrize(('values', 'message'), [
    ({'samples': 0}, 'samples must be at least 1, got 0'),
    ({'samples': 2.5}, 'samples must be a whole number, got 2.5'),
    ({'psi': 1.0}, r'psi must lie in \[0, 1\), got 1.0'),
    ({'epsilon': 0.0}, r'epsilon must lie in \(0, 1\], got 0.0'),
    ({'known_mass': 0.5}, r'known_mass must lie in \(0.5, 1\), got 0.5'),
    ({'undecided': 'guess'}, 'undecided must be one of cautious, analogy'),
    ({'proposal': 'both'}, 'proposal must be one of prior, belief'),
    ({'inference': 'guess'}, 'inference must be one of posterior, abc'),
    ({'window': 0}, 'window must be at least 1, got 0'),
    ({'lapse': float('nan')}, 'lapse must be a number'),
    ({'prior': 0.0}, r'prior must lie in \(0, 1\) \(in \[0, 1\] for abc\)'),
    ({'samples': None}, 'samples must be given'),
])
def test_a_wrong_value_is_named_with_its_range(values, message):
    with pytest.raises(ConfigError, match=message):
        EstimatorSettings(**values)


def test_a_domain_files_section_is_checked_by_the_same_declarations():
    assert likelihood_section({'form': 'usage', 'lapse': 0.2, 'seeds': 2}, 'd.yaml') == \
        {'likelihood': 'usage', 'lapse': 0.2, 'likelihood_seeds': 2}
    for entry, message in (({'lapse': 1.5}, r'd.yaml: likelihood: lapse must lie in \[0, 1\)'),
                           ({'bandwidth': -1}, 'likelihood: bandwidth must be at least 0'),
                           ({'seeds': True}, 'likelihood: seeds must be a whole number'),
                           ({'form': None}, 'likelihood: form must be given')):
        with pytest.raises(ConfigError, match=message):
            likelihood_section(entry, 'd.yaml')


@pytest.mark.parametrize('bad', [dict(samples=0), dict(prior=1.5), dict(epsilon=0.0),
                                 dict(psi=1.0), dict(window=0), dict(decay=0.0),
                                 dict(window=2, decay=0.5, inference='abc'),
                                 dict(proposal='posterior'), dict(proposal_floor=0.5),
                                 dict(prior=1.0), dict(prior=0.0), dict(inference='magic'),
                                 dict(undecided='maybe'), dict(sweeps=-1),
                                 dict(coupling=1.0), dict(decay=0.5), dict(alike_rooms=-1.0),
                                 dict(alike_rooms=1.0, coupling=0.5)])
def test_settings_reject_out_of_range_values(bad):
    with pytest.raises(ConfigError):
        EstimatorSettings(**bad)


def test_presets_name_the_papers_reading_and_the_sequential_one():
    paper = EstimatorSettings.preset('paper')
    assert (paper.inference, paper.prior, paper.proposal, paper.window) == \
        ('abc', 0.8, 'prior', None) and paper.variant == 'paper'
    sequential = EstimatorSettings.preset('sequential', samples=50)
    assert (sequential.proposal, sequential.window, sequential.samples) == ('belief', 1, 50)
    assert sequential.variant == 'sequential'
    assert EstimatorSettings.preset('paper', window=3).variant == 'abc (custom)'
    # A decay replaces the preset's window (the two forgettings exclude each other).
    decayed = EstimatorSettings.preset('sequential', decay=0.5)
    assert (decayed.window, decayed.decay) == (None, 0.5)
    assert EstimatorSettings().variant == 'posterior'
    assert EstimatorSettings(likelihood='indicator').variant == \
        'posterior (indicator likelihood)'
    with pytest.raises(ConfigError, match='unknown inference'):
        EstimatorSettings.preset('guess')

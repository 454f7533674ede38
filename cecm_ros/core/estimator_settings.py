"""The estimator's settings, declared once.

Each field of :class:`EstimatorSettings` carries its declaration (:class:`Setting`, in
the field's metadata): what it is, its range or choices, what leaving it open means
(``the domain's``, ``the inference preset's``) and the key a domain file's
``likelihood:`` section gives it under. Everything else is made from these: the checks
here, the ``cecm`` options (``tools/options.py``), sweep-file keys
(``experiments/sweep.py``), the estimator node's parameters and the values the task
manager reads back from it (``session/estimator_parameters.py``), and the domain file's
section (:func:`likelihood_section`). A value left open is ``None`` everywhere above the
wire; :func:`settings_from_values` is the one place that fills it in.
"""

from __future__ import annotations

import math
import numbers
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .errors import ConfigError
from .inference import UNDECIDED_RULES
from .likelihood import Likelihood, likelihood_model, likelihood_names

INFERENCE_MODES = ('posterior', 'abc')

# Named readings of CE-CM; any setting given explicitly overrides its preset.
PRESETS: dict[str, dict[str, Any]] = {
    'posterior': {'inference': 'posterior'},
    'paper': {'inference': 'abc', 'proposal': 'prior', 'window': None, 'decay': None},
    'sequential': {'inference': 'abc', 'proposal': 'belief', 'window': 1, 'decay': None},
}

# What leaving a setting open means (Setting.open).
DOMAINS = "the domain's"
PRESET = "the inference preset's"
OFF = 'off'


@dataclass(frozen=True)
class Setting:
    """One estimator setting's declaration (the rest, name, type and default, is its
    field's). ``low``/``high`` bound it (``*_open``: the bound itself is refused);
    ``choices`` lists its values (or a function that lists them: a registry);
    ``open`` says what leaving it out means where that is not its default; ``off`` is a
    value a user gives to switch it off (None in the settings); ``fallback`` the value
    used when neither the user nor the domain gives one; ``section_key`` its key in a
    domain file's ``likelihood:`` section; ``group`` names settings that exclude each
    other."""

    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    open: str = ''
    off: Any = None
    fallback: Any = None
    section_key: str | None = None
    group: str = ''         # settings of one group are given one at a time (the CLI's)
    name: str = ''          # filled in from the field
    type: type = str        # filled in from the field's annotation
    default: Any = None     # filled in from the field

    def allowed(self) -> tuple[str, ...] | None:
        return self.choices() if callable(self.choices) else self.choices

    def bounds_text(self) -> str:
        """The range in words: 'in [0, 1)', 'at least 1', 'above 0'."""
        if self.low is not None and self.high is not None:
            return (f'in {"(" if self.low_open else "["}{self.low:g}, {self.high:g}'
                    f'{")" if self.high_open else "]"}')
        if self.low is not None:
            return f'{"above" if self.low_open else "at least"} {self.low:g}'
        if self.high is not None:
            return f'{"below" if self.high_open else "at most"} {self.high:g}'
        return ''

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` lies in the range (choices are checked by :meth:`problem`)."""
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (self.high is not None
                    and (value > self.high or (self.high_open and value == self.high)))

    def problem(self, value: Any) -> str:
        """What is wrong with ``value`` ('' when nothing; None is 'left open')."""
        if value is None:
            return '' if self.default is None else f'{self.name} must be given'
        if self.type is str:
            if not isinstance(value, str):
                return f'{self.name} must be a string, got {value!r}'
            allowed = self.allowed()
            if allowed is not None and value not in allowed:
                return f'{self.name} must be one of {", ".join(allowed)}, got {value!r}'
            return ''
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not number or (self.type is int and not float(value).is_integer()) \
                or not math.isfinite(value):
            kind = 'a whole number' if self.type is int else 'a number'
            return f'{self.name} must be {kind}, got {value!r}'
        if not self.accepts(value):
            verb = 'lie' if self.low is not None and self.high is not None else 'be'
            return f'{self.name} must {verb} {self.bounds_text()}, got {value!r}'
        return ''


def setting(default: Any, help: str, **declared) -> Any:
    """A field of EstimatorSettings with its declaration."""
    return field(default=default, metadata={'setting': Setting(help, **declared)})


@dataclass(frozen=True)
class EstimatorSettings:
    """CE-CM's parameters. Defaults: the posterior over every task with the paper's prior
    and thresholds (the undecided rule was chosen by measurement, docs/experiments.md);
    the paper's Algorithm 1 is the ``paper`` preset."""

    inference: str = setting(
        'posterior', "CE-CM's inference: 'posterior' (over every task seen, weighed by "
        "the likelihood), 'paper' (Algorithm 1 as published: prior samples pooled over "
        "tasks) or 'sequential' (samples from the belief, last task only)",
        choices=tuple(PRESETS))
    samples: int = setting(500, 'N: particles (posterior) or samples per task (abc)', low=1)
    prior: float = setting(0.8, 'Bernoulli prior P(c_i = 1) (the paper\'s)', low=0.0,
                           high=1.0)
    epsilon: float = setting(
        0.24, 'a trajectory explains an observation below this distance (TidyUP 0.24, '
        'Overcooked 0.03)', low=0.0, high=1.0, low_open=True, open=DOMAINS)
    psi: float = setting(0.5, 'estimate threshold: c_i = 1 when theta_i > psi', low=0.0,
                         high=1.0, high_open=True)
    undecided: str = setting('analogy', 'posterior: how capabilities the evidence leaves '
                             'undecided enter the estimate', choices=UNDECIDED_RULES)
    sweeps: int = setting(4, 'posterior: Metropolis moves per particle after each task',
                          low=0)
    coupling: float = setting(0.0, "posterior: prior coupling of one room's capabilities "
                              '(0 = independent)', low=0.0, high=1.0, high_open=True)
    alike_rooms: float = setting(
        0.0, 'posterior: concentration of the prior that makes rooms alike (a pattern of '
        'missing capabilities seen in some rooms is likelier in the others; smaller = more '
        'alike; 0 = independent rooms)', low=0.0)
    window: int | None = setting(
        None, 'forget tasks older than this many (0 = never)', low=1, open=PRESET, off=0,
        group='forgetting')
    decay: float | None = setting(None, 'abc: weigh a sample from k tasks ago by decay**k',
                                  low=0.0, high=1.0, low_open=True, open=OFF,
                                  group='forgetting')
    proposal: str = setting('prior', "abc: draw samples from the 'prior' or the current "
                            "'belief'", choices=('prior', 'belief'), open=PRESET)
    proposal_floor: float = setting(
        0.05, "abc with proposal 'belief': keep every P(c_i = 1) in [floor, 1 - floor]",
        low=0.0, high=0.5, low_open=True, high_open=True)
    likelihood: str | None = setting(
        None, 'posterior: how a task weighs a hypothesis (core/likelihood.py)',
        choices=likelihood_names, open=DOMAINS, fallback='kernel', section_key='form')
    lapse: float | None = setting(
        None, "graded likelihoods: chance of a step none of the partner's modelled plans "
        'explains (PDDL domains 0.05, Overcooked 0.1)', low=0.0, high=1.0, high_open=True,
        open=DOMAINS, fallback=0.05, section_key='lapse')
    bandwidth: float | None = setting(
        None, 'kernel: a soft shoulder beyond epsilon, exp(-(d - epsilon) / bandwidth) '
        '(0 = none)', low=0.0, open=DOMAINS, fallback=0.0, section_key='bandwidth')
    likelihood_seeds: int | None = setting(
        None, 'searches per hypothesis, each with its own seed, for a planner that has one '
        '(Overcooked 4)', low=1, open=DOMAINS, fallback=1, section_key='seeds')
    known_mass: float = setting(0.99, 'graded likelihoods: posterior probability at which '
                                'a capability is reported known', low=0.5, high=1.0,
                                low_open=True, high_open=True)
    misperception: float = setting(
        0.0, 'graded likelihoods: chance that an observed step shows the partner change '
        'what it did not (a perception glitch; 0 = what is seen is true)', low=0.0,
        high=0.5, high_open=True)

    def __post_init__(self):
        for name, spec in SETTINGS.items():
            if name == 'inference':
                continue    # the mode, not the preset it came from (below)
            problem = spec.problem(getattr(self, name))
            if problem:
                raise ConfigError(problem)
        if self.inference not in INFERENCE_MODES:
            raise ConfigError(f'inference must be one of {", ".join(INFERENCE_MODES)} (or a '
                              f'preset: {", ".join(PRESETS)}), got {self.inference!r}')
        if self.inference == 'posterior' and not 0.0 < self.prior < 1.0:
            raise ConfigError(f'prior must lie in (0, 1) (in [0, 1] for abc), got {self.prior}')
        if self.alike_rooms > 0 and self.coupling > 0:
            raise ConfigError('choose either coupling or alike_rooms, not both')
        if self.window is not None and self.decay is not None:
            raise ConfigError('choose either window or decay forgetting, not both')
        if self.likelihood is not None:
            # What the chosen likelihood declares it takes (its lapse rule, a glitch).
            likelihood_model(self.likelihood).check_settings(self.lapse, self.misperception)
        if self.inference == 'posterior' and self.decay is not None:
            raise ConfigError('decay applies to abc inference; the posterior forgets with '
                              'window')

    @classmethod
    def preset(cls, name: str, **overrides) -> EstimatorSettings:
        """Settings of a named reading (``posterior``, ``paper``, ``sequential``)."""
        try:
            values = dict(PRESETS[name])
        except KeyError:
            raise ConfigError(f'unknown inference {name!r}; choose one of '
                              f'{", ".join(PRESETS)}') from None
        given = {k: v for k, v in overrides.items() if v is not None}
        if 'decay' in given:
            values['window'] = None   # decay replaces the preset's window
        values.update(given)
        return cls(**values)

    @property
    def weighted(self) -> bool:
        """Whether the posterior weighs hypotheses by a graded likelihood."""
        return self.inference == 'posterior' and self.likelihood != 'indicator'

    def for_domain(self, domain) -> EstimatorSettings:
        """These settings with the likelihood parameters left open filled in from the
        domain (``Domain.likelihood_defaults``)."""
        defaults = {**DEFAULT_LIKELIHOOD, **getattr(domain, 'likelihood_defaults', {})}
        return replace(self, **{name: defaults[name] for name in DEFAULT_LIKELIHOOD
                                if getattr(self, name) is None})

    def likelihood_form(self) -> Likelihood:
        """The likelihood these settings describe (open parameters: the fallbacks)."""
        lapse = DEFAULT_LIKELIHOOD['lapse'] if self.lapse is None else self.lapse
        bandwidth = DEFAULT_LIKELIHOOD['bandwidth'] if self.bandwidth is None \
            else self.bandwidth
        return Likelihood.named(self.likelihood or DEFAULT_LIKELIHOOD['likelihood'],
                                self.epsilon, lapse, bandwidth, self.misperception)

    @property
    def variant(self) -> str:
        """The preset these settings match, or a description."""
        if self.inference == 'posterior':
            return 'posterior' if self.weighted else 'posterior (indicator likelihood)'
        for name in ('paper', 'sequential'):
            preset = PRESETS[name]
            if all(getattr(self, key) == value for key, value in preset.items()):
                return name
        return 'abc (custom)'

    @classmethod
    def from_dict(cls, data: dict) -> EstimatorSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f'unknown estimator settings {unknown}')
        return cls(**data)


def _declarations() -> dict[str, Setting]:
    """Each field's declaration with its name, type (from the annotation) and default."""
    hints = typing.get_type_hints(EstimatorSettings)
    schema = {}
    for item in fields(EstimatorSettings):
        kind = next(t for t in (int, float, str) if t in (hints[item.name],
                                                           *typing.get_args(hints[item.name])))
        schema[item.name] = replace(item.metadata['setting'], name=item.name, type=kind,
                                    default=item.default)
    return schema


# The declarations by name, in field order.
SETTINGS: Mapping[str, Setting] = _declarations()

# The likelihood parameters a domain may set (Domain.likelihood_defaults) and the values
# used where it sets none: a small lapse suits a partner that plans as the robot does.
DEFAULT_LIKELIHOOD: dict[str, Any] = {name: spec.fallback for name, spec in SETTINGS.items()
                                      if spec.fallback is not None}


def settings_from_values(values: Mapping[str, Any],
                         default_epsilon: float | None = None) -> EstimatorSettings:
    """The settings a user gave, by name (None or absent: left open): the inference
    preset's values where it has them, the domain's epsilon (``default_epsilon``) where
    none is given, a setting's ``off`` value switching it off. The one place where what
    is left open is filled in, for the CLI, sweeps and the estimator node alike."""
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise ConfigError(f'unknown estimator settings {unknown}')
    overrides: dict[str, Any] = {}
    switched_off: dict[str, Any] = {}
    for name, spec in SETTINGS.items():
        value = values.get(name)
        if value is None or name == 'inference':
            continue
        if spec.off is not None and value == spec.off:
            switched_off[name] = None
        else:
            overrides[name] = value
    if overrides.get('epsilon') is None and default_epsilon is not None:
        overrides['epsilon'] = default_epsilon
    settings = EstimatorSettings.preset(values.get('inference') or 'posterior', **overrides)
    return replace(settings, **switched_off) if switched_off else settings


# ------------------------------------------------ a domain file's `likelihood:` section
SECTION_KEYS = {spec.section_key: name for name, spec in SETTINGS.items() if spec.section_key}


def likelihood_section(entry, where: str) -> dict:
    """The estimator defaults a domain file's ``likelihood:`` section gives (``form``,
    ``lapse``, ``bandwidth``, ``seeds``), checked as the settings are; ``where`` names
    the file in errors."""
    if entry is None:
        return {}
    if not isinstance(entry, dict):
        raise ConfigError(f'{where}: likelihood: expected a mapping of '
                          f'{", ".join(SECTION_KEYS)}, got {entry!r}')
    unknown = sorted(set(entry) - set(SECTION_KEYS))
    if unknown:
        raise ConfigError(f'{where}: likelihood: unknown keys {unknown}; known: '
                          f'{sorted(SECTION_KEYS)}')
    values = {}
    for key, value in entry.items():
        spec = SETTINGS[SECTION_KEYS[key]]
        problem = spec.problem(value) if value is not None else f'{spec.name} must be given'
        if problem:
            # In the file's words: its key, not the setting's name.
            raise ConfigError(f'{where}: likelihood: {key}{problem[len(spec.name):]}')
        values[spec.name] = value
    return values

"""The estimator's settings as ROS parameters: the estimator node declares them, the task
manager reads them back over GetParameters and the session runner turns them into
settings again, all from the one schema (``core/estimator_settings.SETTINGS``).

ROS parameters have no "unset", so a setting left open (the domain's, the inference
preset's) travels as a value it can never take: ``''`` for a string, 0 for a number
whose range excludes 0, else -1. ``window`` is the one with both: -1 is the preset's,
0 switches forgetting off, as ``cecm --window 0`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cecm_ros.core.estimator_settings import (
    SETTINGS,
    EstimatorSettings,
    Setting,
    settings_from_values,
)


def unset_value(spec: Setting) -> Any:
    """The parameter value that leaves ``spec`` open."""
    if spec.type is str:
        return ''
    zero_taken = spec.accepts(0) or spec.off == 0
    unset = -1 if zero_taken else 0
    return float(unset) if spec.type is float else unset


def parameter_default(spec: Setting) -> Any:
    """The node's default: the setting's own, or "open" where it has an open meaning."""
    return unset_value(spec) if spec.open else spec.default


# The estimator node's parameters that make up its settings, and their defaults there.
NODE_PARAMETERS: dict[str, Any] = {name: parameter_default(spec)
                                   for name, spec in SETTINGS.items()}


def parameter_description(spec: Setting) -> str:
    """The parameter's description: the setting's help, what its open value means."""
    text = spec.help[0].upper() + spec.help[1:]
    if spec.open:
        unset = unset_value(spec)
        shown = "''" if unset == '' else f'{unset:g}' if isinstance(unset, float) else unset
        text += f'; {shown} = {spec.open}'
    return text


def parameter_range(spec: Setting) -> dict[str, Any]:
    """``low``/``high``/``choices`` for the node's declaration: the setting's range with
    the open value let in (the settings refuse an open bound itself, naming it)."""
    if spec.type is str:
        allowed = spec.allowed()
        if allowed is None:
            return {}
        return {'choices': ('', *allowed) if spec.open else tuple(allowed)}
    low, high = spec.low, spec.high
    if spec.open and low is not None:
        low = min(low, unset_value(spec))   # below an `off` value too (window: -1 < 0)
    return {key: value for key, value in (('low', low), ('high', high)) if value is not None}


def values_from_parameters(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings' values (None where left open) from parameter values."""
    given = {**NODE_PARAMETERS, **{k: v for k, v in values.items() if k in SETTINGS}}
    return {name: None if spec.open and given[name] == unset_value(spec) else given[name]
            for name, spec in SETTINGS.items()}


def settings_from_parameters(values: Mapping[str, Any],
                             default_epsilon: float | None = None) -> EstimatorSettings:
    """Estimator settings from the node's parameter values; what is open is filled in as
    everywhere else (``settings_from_values``): the domain's epsilon, the preset's."""
    return settings_from_values(values_from_parameters(values), default_epsilon)


def parameters_from_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The node's parameter values for settings a user gave (None or absent: left open),
    typed as the node declares them (a float parameter refuses an int)."""
    parameters = dict(NODE_PARAMETERS)
    for name, spec in SETTINGS.items():
        value = values.get(name)
        if value is not None:
            parameters[name] = float(value) if spec.type is float else value
    return parameters

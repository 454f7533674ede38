"""The one way a cecm_ros node declares its parameters (docs/nodes.md, "Parameters").

``self.declare(name, default, description, low=, high=, choices=, check=)`` gives a
parameter its type, range, allowed values and a check of its own, all in its
descriptor (so ``ros2 param describe`` shows them). A value refused at start-up (from a
parameters file or the command line) is kept out: the node starts with the default,
names the parameter, the value and what is allowed, and a lifecycle node refuses to
configure until it is fixed (``ros2 param set``); at run time a bad value is refused
with the reason. Any rclpy node (lifecycle or not) mixes it in and calls
``start_parameter_checks()`` in its ``__init__``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.parameter import Parameter

_TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
          float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}


class DeclaredParameters:
    """Mixed into an rclpy Node (it uses the node's declare_parameter, get_parameter,
    get_logger and add_on_set_parameters_callback)."""

    # What follows a value refused at start-up: a lifecycle node waits to be fixed; a
    # tool that cannot wait says it does not start (and raises parameter_errors).
    PARAMETER_REFUSED = 'will not configure until this is fixed'

    def start_parameter_checks(self) -> None:
        self._choices: dict[str, tuple[str, ...]] = {}
        self._checks: dict[str, Callable[[Any], str]] = {}
        self.parameter_errors: list[str] = []   # bad values given at start-up
        self.add_on_set_parameters_callback(self._on_set_parameters)  # type: ignore[attr-defined]

    def declare(self, name: str, default: Any, description: str,
                param_type: int | None = None, read_only: bool = False, *,
                low: float | None = None, high: float | None = None,
                choices: tuple[str, ...] | None = None,
                check: Callable[[Any], str] | None = None,
                dynamic_typing: bool = False) -> None:
        """Declare a parameter with its range (``low``..``high``), its ``choices`` (for a
        string array: of every element) or a ``check`` (value -> '' or what is wrong).

        A value outside them is refused when set at run time, with the reason. One that
        comes from a parameters file or the command line is kept out as well: the node
        starts with the default, and ``configure`` fails naming the parameter, the value
        and what is allowed, so that the node stays up to be fixed (``ros2 param set``).
        """
        if param_type is None:
            param_type = _TYPES[type(default)]
        descriptor = ParameterDescriptor(name=name, type=param_type, description=description,
                                         read_only=read_only, dynamic_typing=dynamic_typing)
        if low is not None or high is not None:
            integer = param_type == ParameterType.PARAMETER_INTEGER
            shown = [('' if bound is None else f'{int(bound)}' if integer else f'{bound:g}')
                     for bound in (low, high)]
            # A side left open is unbounded (rclpy's range needs both: a far bound).
            descriptor.description += (f' [{shown[0]}, {shown[1]}]' if all(shown) else
                                       f' (>= {shown[0]})' if shown[0] else
                                       f' (<= {shown[1]})')
            low = -2**62 if low is None else low
            high = 2**62 if high is None else high
            if integer:
                descriptor.integer_range = [IntegerRange(from_value=int(low),
                                                         to_value=int(high), step=1)]
            else:
                descriptor.floating_point_range = [FloatingPointRange(
                    from_value=float(low), to_value=float(high), step=0.0)]
        if choices:
            self._choices[name] = tuple(choices)
            descriptor.additional_constraints = 'one of: ' + ', '.join(choices)
        if check is not None:
            self._checks[name] = check
        try:
            self.declare_parameter(name, default, descriptor)
            problem = self._check_value(name, self.get_parameter(name).value)
        except (InvalidParameterValueException, InvalidParameterTypeException) as error:
            # The default is taken as it is: a check that depends on another parameter
            # (a partner type on the domain) may refuse it too, and the node must start.
            self._taking_default = True
            try:
                self.declare_parameter(name, default, descriptor, ignore_override=True)
            finally:
                self._taking_default = False
            problem = _refusal(name, error)
        if problem:
            self.parameter_errors.append(problem)
            self.get_logger().error(f'{problem}; the node keeps the default {default!r} and '
                                    f'{self.PARAMETER_REFUSED}')

    def _check_value(self, name: str, value) -> str:
        """What is wrong with ``value`` for ``name`` beyond its type and range ('' = ok)."""
        allowed = self._choices.get(name)
        if allowed and isinstance(value, str) and value not in allowed:
            return f'parameter {name!r} = {value!r} is not one of {", ".join(allowed)}'
        if allowed and not isinstance(value, str):
            wrong = [v for v in value if v not in allowed]
            if wrong:
                return (f'parameter {name!r}: {wrong[0]!r} is not one of '
                        f'{", ".join(allowed)}')
        check = self._checks.get(name)
        problem = check(value) if check is not None else ''
        return f'parameter {name!r} = {value!r}: {problem}' if problem else ''

    def check_parameters(self, changes: dict[str, Any]) -> str:
        """What is wrong with these new values together with the others ('' = ok).

        Override for constraints between parameters; undeclared ones are not set yet.
        """
        return ''

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        """Refuse values outside a parameter's choices or check (rclpy checks types and
        ranges first), and combinations that ``check_parameters`` refuses."""
        if getattr(self, '_taking_default', False):
            return SetParametersResult(successful=True)
        for parameter in parameters:
            problem = self._check_value(parameter.name, parameter.value)
            if problem:
                return SetParametersResult(successful=False, reason=problem)
        problem = self.check_parameters({p.name: p.value for p in parameters})
        if problem:
            return SetParametersResult(successful=False, reason=problem)
        for parameter in parameters:
            self.parameter_errors = [e for e in self.parameter_errors
                                     if not e.startswith(f'parameter {parameter.name!r}')]
        return SetParametersResult(successful=True)

    def param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def declare_unset_list(self, name: str, description: str) -> list[str]:
        """A string list that is absent unless given (ROS cannot type an empty list): its
        value, or [] when it was not given."""
        self.declare_parameter(  # type: ignore[attr-defined]
            name, Parameter.Type.STRING_ARRAY,
            ParameterDescriptor(name=name, type=ParameterType.PARAMETER_STRING_ARRAY,
                                description=description))
        try:
            return list(self.get_parameter(name).value)  # type: ignore[attr-defined]
        except ParameterUninitializedException:
            return []


def _refusal(name: str, error: Exception) -> str:
    """rclpy's refusal of a start-up value, in the words of a run-time one: the
    parameter, the value and the reason (its check's, or its type or range)."""
    text = str(error.args[0]) if error.args else str(error)
    value, _, reason = text.partition(') for parameter. Reason: ')
    if not reason:
        return f'parameter {name!r}: {text}'
    value = value.partition('(')[2]
    if reason.startswith(f'parameter {name!r}'):
        return reason
    return f'parameter {name!r} = {value}: {reason}'

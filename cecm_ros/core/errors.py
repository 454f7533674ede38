"""Exceptions with messages that name the offending input."""


class CecmError(Exception):
    """Base class for every error the core raises on bad input or failed planning."""


class ConfigError(CecmError, ValueError):
    """A configuration file or value is malformed."""


class UnknownNameError(CecmError, KeyError):
    """A room, item, agent, capability or action name is not part of the model."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0]) if self.args else ''


class PlanningError(CecmError, RuntimeError):
    """The planner could not produce a plan."""


class UnsolvableTaskError(PlanningError):
    """The goal cannot be reached from the start state under the given capabilities."""


class PlannerTimeoutError(PlanningError):
    """The planner ran out of time."""


class InterruptedWorkError(CecmError):
    """Long work was asked to stop (its caller is shutting down)."""

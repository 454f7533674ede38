"""The robot's skill kinds in a PDDL domain: one per action schema (move, pick, ...)."""

from __future__ import annotations

from .model import PddlModel


class SchemaSkills:
    """An action's skill kind is its schema's name."""

    def __init__(self, domain: PddlModel):
        self.domain = domain
        self.kinds: tuple[str, ...] = tuple(dict.fromkeys(a.schema for a in domain.actions))

    def kind_of(self, action: str) -> str:
        return self.domain.canonical_action(action).strip('()').split()[0]

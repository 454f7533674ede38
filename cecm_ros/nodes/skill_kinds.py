"""The robot's skill kinds: which skill server performs an action (a role of the node
layer, outside the world model).

The executor sends each robot action to ``robot/skills/<kind>``; the world simulator and
a real robot's skill bridge serve those kinds. A domain names its skills in its registry
spec (:mod:`cecm_ros.domains`); a domain that names none has one kind, ``act``, that
performs every action.
"""

from __future__ import annotations

import weakref
from typing import Protocol

from cecm_ros.core.domain import Domain


class RobotSkills(Protocol):
    kinds: tuple[str, ...]

    def kind_of(self, action: str) -> str: ...


class OneSkill:
    """Every action is performed by one skill server, ``act``."""

    kinds: tuple[str, ...] = ('act',)

    def __init__(self, domain: Domain):
        self.domain = domain

    def kind_of(self, action: str) -> str:
        return 'act'


WAIT = 'wait'       # the skill kind that executes "noop"
ALL = 'all'         # in a `skills` parameter: every kind of the domain
_SKILLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def skills_of(domain: Domain) -> RobotSkills:
    """The domain's robot skills (made once per domain object)."""
    skills = _SKILLS.get(domain)
    if skills is None:
        from cecm_ros.domains import robot_skills_for

        skills = _SKILLS[domain] = robot_skills_for(domain)
    return skills


def served_kinds(domain: Domain, wanted: list[str]) -> list[str]:
    """The skill kinds a node serves or uses: ``wanted``, or every kind of the domain and
    ``wait`` for ``[all]`` (or none); a kind the domain does not have is an error."""
    known = [*skills_of(domain).kinds, WAIT]
    wanted = [kind for kind in wanted if kind != ALL] if ALL not in wanted else []
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise ValueError(f'skills {unknown} are not skill kinds of domain {domain.name!r} '
                         f'({", ".join(known)})')
    return list(wanted) or known

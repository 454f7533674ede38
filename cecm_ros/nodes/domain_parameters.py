"""A node's domain as parameters: ``domain`` and its options namespaced by the domain
(``tidyup.household``), the checks that load it once per process, the plan store."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.domain import Domain
from cecm_ros.core.errors import CecmError
from cecm_ros.domains import (
    BUILT_IN,
    DEFAULT_DOMAIN,
    DomainSpec,
    available_domains,
    domain_spec,
    load_domain,
)
from cecm_ros.domains.tidyup.household import Household
from cecm_ros.nodes.skill_kinds import ALL as ALL_SKILLS
from cecm_ros.nodes.skill_kinds import WAIT as WAIT_SKILL
from cecm_ros.nodes.skill_kinds import skills_of


def _loads(kind) -> Callable[[str], str]:
    """A check that a model file ('' = the package's) loads as ``kind`` (its from_yaml)."""
    def check(path: str) -> str:
        if not path:
            return ''
        try:
            kind.from_yaml(path)
        except CecmError as error:
            return str(error)
        return ''
    return check


# The skill kind that executes "noop", and a `skills` entry naming every kind of the domain.


def _known_domain(spec: str) -> str:
    """A check of the ``domain`` parameter: a registered name or a file that exists."""
    if spec in available_domains() or os.path.isfile(spec):
        return ''
    return f'unknown domain; domains: {", ".join(available_domains())} or a domain file'


def _spec_named(domain: str) -> DomainSpec | None:
    """The spec of a domain parameter's value (a name or a domain file), or None when it
    names nothing loadable (the ``domain`` parameter's check says why)."""
    try:
        spec = domain_spec(str(domain).strip())
    except CecmError:
        return None
    return spec


_DOMAINS: dict[tuple, Domain] = {}


def domain_of(domain: str, options: dict[str, str]) -> Domain:
    """A domain loaded once per process and setting (the parameter checks and the node's
    configure share it)."""
    key = (domain, tuple(sorted(options.items())))
    if key not in _DOMAINS:
        _DOMAINS[key] = load_domain(domain, **options)
    return _DOMAINS[key]


def _plan_store_check(value: Any) -> str:
    """'' (the default store), 'off' or false, true, or the path of a file."""
    if isinstance(value, bool):
        return ''
    if not isinstance(value, str):
        return f"{value!r} is neither a file path nor 'off'"
    value = value.strip()
    if not value or value.lower() == 'off':
        return ''
    path = Path(value).expanduser()
    if path.is_dir():
        return f'{value!r} is a directory; give the path of a store file (or \'off\')'
    return ''


class DomainParameters:
    """Mixed into CecmNode (it uses declare and param)."""

    def load_model(self) -> Domain:
        """The domain of ``domain`` with its options (``<domain>.<option>``): the one the
        parameter checks loaded already, so a node grounds (and a domain file is
        checked) once."""
        return domain_of(self.param('domain'), self.domain_options())

    def domain_options(self, domain: str | None = None) -> dict[str, str]:
        """The options of ``domain`` (the node's by default) its parameters give, unset
        ones left out."""
        spec = _spec_named(self.param('domain') if domain is None else domain)
        if spec is None or not spec.options:
            return {}
        options = {}
        for option in spec.options:
            name = f'{spec.name}.{option}'
            value = self.param(name) if self.has_parameter(name) else ''
            if value:
                options[option] = str(value)
        return options

    def declare_model_parameters(self) -> None:
        """``domain`` and every registered domain's options, namespaced by the domain
        (``tidyup.household``, ``overcooked.file``); a plug-in domain's options once the
        node knows it is the one."""
        checks = {'tidyup.household': _loads(Household),
                  'tidyup.capabilities': _loads(CapabilityCatalog)}
        for spec in BUILT_IN.values():
            self._declare_options(spec, checks)
        self.declare('domain', DEFAULT_DOMAIN,
                     'The domain: a registered name (cecm domains) or a domain file',
                     check=self._domain_check)
        spec = _spec_named(self.param('domain'))
        if spec is not None and spec.name not in BUILT_IN:
            self._declare_options(spec, {})

    def _declare_options(self, spec, checks: dict) -> None:
        for option, meaning in (spec.options or {}).items():
            name = f'{spec.name}.{option}'
            if not self.has_parameter(name):
                self.declare(name, '', f'Domain {spec.name}: {meaning or option}',
                             check=checks.get(name))

    def declare_plan_store(self) -> None:
        """The ``plan_store`` parameter of a node that plans (see :meth:`planner_options`)."""
        # Any type: YAML reads a bare `off` (a parameters file, -p plan_store:=off) as false.
        self.declare('plan_store', '',
                     "Plans kept on disk for every later process (SQLite): '' = the user's "
                     "cache ($XDG_CACHE_HOME/cecm_ros/plans.sqlite), 'off' (or false) = "
                     'none, else a file path', check=_plan_store_check, dynamic_typing=True)

    def planner_options(self) -> dict[str, Any]:
        """The keyword arguments of ``Domain.planner`` the ``plan_store`` parameter gives."""
        value = self.param('plan_store')
        if isinstance(value, bool):
            return {'plan_cache': value}
        value = str(value).strip()
        if value.lower() == 'off':
            return {'plan_cache': False}
        return {'plan_cache': str(Path(value).expanduser()) if value else True}

    def _domain_check(self, spec: str) -> str:
        """A domain that loads (a domain file is read and checked now, not at configure)."""
        problem = _known_domain(spec)
        if problem:
            return problem
        try:
            domain_of(spec, self.domain_options(spec))
        except CecmError as error:
            return str(error)
        return ''

    def _checked_domain(self) -> Domain | None:
        """The domain of the parameters, or None when it does not load (the ``domain``
        parameter reports that once; checks that depend on it then pass)."""
        try:
            return domain_of(self.param('domain'), self.domain_options())
        except CecmError:
            return None

    def skills_check(self) -> Callable[[list[str]], str]:
        """A check of a ``skills`` list against the skill kinds of the node's domain,
        ``wait`` and ``all``."""
        def check(values: list[str]) -> str:
            domain = self._checked_domain()
            if domain is None:
                return '' if values else 'must list at least one'
            allowed = [*skills_of(domain).kinds, WAIT_SKILL, ALL_SKILLS]
            wrong = [value for value in values if value not in allowed]
            if wrong:
                return (f'{wrong[0]!r} is not a skill kind of domain {domain.name!r} '
                        f'({", ".join(allowed)})')
            return '' if values else 'must list at least one'
        return check

    def partner_check(self) -> Callable[[str], str]:
        """A check of a partner spec (a type or ``name=0,...``) against the catalogue of
        the node's domain."""
        def check(spec: str) -> str:
            domain = self._checked_domain()
            if domain is None:
                return ''
            try:
                domain.catalog.resolve(spec)
            except CecmError as error:
                return str(error)
            return ''
        return check

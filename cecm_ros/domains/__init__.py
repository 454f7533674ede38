"""The domains cecm_ros knows: each is a spec naming its parts, loaded when first used.

A domain is a world model (:class:`~cecm_ros.core.domain.Domain`: dynamics, tasks,
distance, states) plus the parts other layers ask for, each behind its own small role:

* planners, by role: ``default`` (what every estimator and node plans with),
  ``reference`` (the plain planner benchmarks compare with) and ``baseline`` (a learned
  policy standing in for the optimistic baseline), each a ``'module:Class'`` built as
  ``Class(domain, **options)``;
* ``panel``: how the web panel draws a state (:mod:`cecm_ros.web.panel_view`);
* ``skills``: the robot's skill kinds (:mod:`cecm_ros.nodes.skill_kinds`).

Parts are named by text and imported only when asked for (as unified-planning's engine
factory does), so no domain module imports its planner or its panel, and loading a
domain starts no planner.

Another Python package adds a domain without editing this one by declaring an entry
point in the group ``cecm_ros.domains`` whose object is a :class:`DomainSpec` (or,
the older form, a callable taking the options and returning a Domain)::

    [project.entry-points."cecm_ros.domains"]
    assembly_cell = "my_package.cell:SPEC"

``load_domain(name_or_path, **options)`` is what every ``cecm`` command (``--domain``)
and every node (its ``domain`` parameter) calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from cecm_ros.core.domain import Domain, Planner
from cecm_ros.core.errors import ConfigError

ENTRY_POINT_GROUP = 'cecm_ros.domains'
DEFAULT_DOMAIN = 'tidyup'


@dataclass(frozen=True)
class DomainSpec:
    """What a domain is made of, by import path (``'package.module:Name'``).

    ``model`` makes the world model from the domain's options (``options`` lists their
    names: a node reads them as parameters under the domain's name, e.g.
    ``tidyup.household``). ``model_class`` (optional) lets a model built directly, not
    through :func:`load_domain`, find its spec again.
    """

    name: str
    description: str
    model: str
    planners: Mapping[str, str] = field(default_factory=dict)
    panel: str = 'cecm_ros.web.panel_view:FactsView'
    skills: str = 'cecm_ros.nodes.skill_kinds:OneSkill'
    # The options the model takes, with what each means (None: any, for a factory
    # taking **options).
    options: Mapping[str, str] | None = field(default_factory=dict)
    model_class: str = ''

    def make(self, **options: Any) -> Domain:
        unknown = [] if self.options is None else \
            sorted(k for k, v in options.items() if k not in self.options and v not in (None, ''))
        if unknown:
            raise ConfigError(f'domain {self.name!r} takes no option {", ".join(unknown)}'
                              + (f' (options: {", ".join(self.options)})'
                                 if self.options else ''))
        factory = _load(self.model, f'domain {self.name!r}')
        domain = factory(**{k: v for k, v in options.items() if v not in (None, '')})
        if not isinstance(domain, Domain):
            raise ConfigError(f'domain {self.name!r} ({self.model}) returned '
                              f'{type(domain).__name__}, not a cecm_ros Domain')
        return _attach(domain, self, {k: _portable(v) for k, v in options.items()})


_PDDL_PLANNERS = {
    'default': 'cecm_ros.domains.pddl.planner:FastDownwardPlanner',
    'reference': 'cecm_ros.domains.pddl.planner:reference_planner',
}
_PDDL_SKILLS = 'cecm_ros.domains.pddl.roles:SchemaSkills'

BUILT_IN: dict[str, DomainSpec] = {spec.name: spec for spec in (
    DomainSpec(
        name='tidyup',
        description='a robot and a person tidy a household (PDDL, Fast Downward)',
        model='cecm_ros.domains.tidyup.model:make_tidyup',
        planners=_PDDL_PLANNERS,
        panel='cecm_ros.domains.tidyup.panel:HouseholdView',
        skills=_PDDL_SKILLS,
        options={'household': "household YAML file ('' = the package's "
                              'config/tidyup_household.yaml)',
                 'capabilities': "capability catalogue YAML file ('' = the one the "
                                 "household file names, else the package's "
                                 'config/capabilities.yaml)'},
        model_class='cecm_ros.domains.tidyup.model:TidyUpModel'),
    DomainSpec(
        name='overcooked',
        description='two cooks make salads in a grid kitchen (macro actions, PUCT MCTS)',
        model='cecm_ros.domains.overcooked.model:make_overcooked',
        planners={'default': 'cecm_ros.domains.overcooked.mcts:MctsPlanner',
                  'baseline': 'cecm_ros.domains.overcooked.qlearning:QPolicyPlanner'},
        panel='cecm_ros.domains.overcooked.panel:KitchenView',
        skills='cecm_ros.domains.overcooked.panel:MacroSkills',
        options={'file': "Overcooked domain file: kitchens, recipes, capabilities ('' "
                         "= the package's config/domains/overcooked/domain.yaml)"},
        model_class='cecm_ros.domains.overcooked.model:OvercookedDomain'),
)}
# A user's PDDL domain file (domain.yaml): not found by name, but by its path.
PDDL_FILE = DomainSpec(
    name='pddl-file',
    description="a user's PDDL domain from a domain.yaml",
    model='cecm_ros.domains.pddl.loading:load_file_domain',
    planners=_PDDL_PLANNERS, skills=_PDDL_SKILLS, options={'path': 'the domain.yaml'},
    model_class='cecm_ros.domains.pddl.file_domain:FileDomain')


def _load(path: str, what: str) -> Any:
    module, _, name = path.partition(':')
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f'{what}: cannot load {path}: {type(error).__name__}: '
                          f'{error}') from error


def _attach(domain: Domain, spec: DomainSpec, options: dict[str, Any] | None = None
            ) -> Domain:
    # Kept on the object (and so in a pickled copy a sweep worker gets); the options it
    # was made with let a cluster's worker make it again (planner_for's ray_address).
    domain.__dict__['registry_spec'] = spec
    if options is not None:
        domain.__dict__['registry_options'] = options
    return domain


def _portable(value: Any) -> Any:
    """An option as a process in another folder reads it: a relative path of a file
    that exists made absolute."""
    if isinstance(value, str | Path) and str(value):
        path = Path(value).expanduser()
        if not path.is_absolute() and path.exists():
            return str(path.resolve())
    return value


def _is_kitchen_file(path: Path) -> bool:
    """Whether a domain file is an Overcooked one (it lists kitchens, not PDDL)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return False   # FileDomain reports what is wrong with it
    return isinstance(data, dict) and 'kitchens' in data and 'pddl' not in data


def _entry_points() -> dict[str, metadata.EntryPoint]:
    try:
        found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # noqa: BLE001 - a broken installed distribution must not stop us
        return {}
    return {entry.name: entry for entry in found}


def available_domains() -> dict[str, str]:
    """Every domain name this installation can load, with a one-line description."""
    names = {name: spec.description for name, spec in BUILT_IN.items()}
    for name, entry in _entry_points().items():
        names.setdefault(name, f'from {entry.value}')
    return dict(sorted(names.items()))


def domain_spec(name: str) -> DomainSpec | None:
    """The spec of a registered domain (built in or an entry point), else None."""
    if name in BUILT_IN:
        return BUILT_IN[name]
    entry = _entry_points().get(name)
    if entry is None:
        return None
    try:
        found = entry.load()
    except Exception as error:  # noqa: BLE001 - any import failure is the plug-in's
        raise ConfigError(f'domain {name!r} ({entry.value}) cannot be loaded: '
                          f'{type(error).__name__}: {error}') from error
    if isinstance(found, DomainSpec):
        return found
    if callable(found):
        # The older form: a factory of the model; its parts come from the defaults.
        return DomainSpec(name=name, description=f'from {entry.value}',
                          model=entry.value, options=_factory_options(found))
    raise ConfigError(f'domain {name!r} ({entry.value}) is {type(found).__name__}, '
                      'neither a DomainSpec nor a factory')


def _factory_options(factory: Callable[..., Any]) -> dict[str, str] | None:
    """The option names a factory takes (None when it takes any: ``**options``)."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return None
    return {p.name: '' for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def load_domain(spec: str | Path | None = None, **options: Any) -> Domain:
    """The domain named ``spec``: a registered name (default TidyUP) or the path of a
    domain file (YAML, see :mod:`cecm_ros.domains.pddl.file_domain`).

    Options go to the domain's model (TidyUP: ``household``, ``capabilities``); an option
    the domain does not take is refused. Errors are ConfigErrors that name the domain
    and what was wrong.
    """
    text = str(spec or DEFAULT_DOMAIN).strip()
    found = domain_spec(text)
    if found is not None:
        return found.make(**options)
    if '/' in text or text.endswith(('.yaml', '.yml')) or Path(text).is_file():
        path = Path(text).expanduser()
        if _is_kitchen_file(path):
            return BUILT_IN['overcooked'].make(**options, file=path)
        return PDDL_FILE.make(**options, path=path)
    raise ConfigError(f'unknown domain {text!r}; domains: '
                      f'{", ".join(available_domains())}')


def spec_of(domain: Domain) -> DomainSpec:
    """The spec ``domain`` was made from, or the one whose model class it is."""
    attached = getattr(domain, 'registry_spec', None)
    if isinstance(attached, DomainSpec):
        return attached
    paths = {f'{cls.__module__}:{cls.__qualname__}' for cls in type(domain).__mro__}
    for candidate in (*BUILT_IN.values(), PDDL_FILE):
        if candidate.model_class in paths:
            _attach(domain, candidate)
            return candidate
    # A model made by hand, outside the registry: the default parts.
    return DomainSpec(name=domain.name or type(domain).__name__, description='',
                      model=f'{type(domain).__module__}:{type(domain).__qualname__}')


def planner_for(domain: Domain, role: str = 'default', **options: Any) -> Planner:
    """The domain's ``default`` or ``reference`` planner, made with ``options`` (e.g.
    ``workers``); a domain that declares no reference planner gets its default one on
    one core. ``ray_address`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``, ``local:N``;
    '' = none) sends its searches to a Ray cluster (:mod:`cecm_ros.cluster`)."""
    if role not in ('default', 'reference'):
        raise ConfigError(f'no planner role {role!r}; roles: default, reference '
                          '(baseline_planner_for() makes a baseline)')
    ray_address = str(options.pop('ray_address', None) or '').strip()
    if ray_address:
        return _planner_on_ray(domain, role, ray_address, options)
    spec = spec_of(domain)
    path = spec.planners.get(role)
    if path is None and role == 'reference':
        return planner_for(domain, 'default', **{'workers': 1, **options})
    if path is None:
        own = getattr(domain, 'planner', None)
        if callable(own):
            # A plug-in written before planners were declared in specs makes its own.
            return own(**options)
        raise ConfigError(f'domain {spec.name!r} declares no planner')
    return _load(path, f'the {role} planner of domain {spec.name!r}')(domain, **options)


def _planner_on_ray(domain: Domain, role: str, address: str,
                    options: dict[str, Any]) -> Planner:
    """The planner of ``role`` with its searches on the Ray cluster at ``address``: made
    here (its memory and plan store stay here) and again in each Ray worker process, one
    search at a time and without a store, from the domain's recipe."""
    from cecm_ros.cluster.ray_searches import RaySearches, WorkerPlanner
    from cecm_ros.core.planning import CachingPlanner

    planner = planner_for(domain, role, **options)
    if not isinstance(planner, CachingPlanner) or not planner.guarantees.deterministic:
        planner.close()
        raise ConfigError(f'ray_address {address!r}: the {role} planner of domain '
                          f'{spec_of(domain).name!r} ({type(planner).__name__}) cannot '
                          'search on a cluster: only a deterministic CachingPlanner can')
    worker = WorkerPlanner(_domain_recipe(domain), planner_for, role,
                           tuple(sorted(_worker_options(domain, role, options).items())),
                           domain.name, tuple(domain.catalog.names))
    try:
        planner.offload_searches(RaySearches(address, worker))
    except BaseException:
        planner.close()
        raise
    return planner


def _domain_recipe(domain: Domain) -> Any:
    """How a worker process makes ``domain`` again: from the model's rebuild arguments
    (as the PDDL planner's worker processes do), else from its registry spec and the
    options it was made with, else from a pickled copy."""
    from cecm_ros.cluster.ray_searches import DomainRecipe, as_given

    rebuild = getattr(domain, 'rebuild_arguments', None)
    if callable(rebuild):
        try:
            return DomainRecipe(type(domain), tuple(rebuild()),
                                what=f'{type(domain).__name__} from its rebuild arguments')
        except NotImplementedError:
            pass
    spec = getattr(domain, 'registry_spec', None)
    options = getattr(domain, 'registry_options', None)
    if isinstance(spec, DomainSpec) and options is not None:
        return DomainRecipe(spec.make, (), dict(options),
                            what=f'domain {spec.name!r} from its options')
    return DomainRecipe(as_given, (domain,), what=f'a pickled {type(domain).__name__}')


def _worker_options(domain: Domain, role: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options of a worker's planner: the caller's, with one search at a time and no
    plan store (the driver keeps the plans), where the planner takes those options."""
    spec = spec_of(domain)
    path = spec.planners.get(role) or spec.planners.get('default')
    factory = _load(path, f'the {role} planner of domain {spec.name!r}') if path else \
        getattr(domain, 'planner', None)
    wanted = {**options, 'workers': 1, 'plan_cache': False}
    taken = _factory_options(factory) if callable(factory) else None
    if taken is None:
        return wanted
    return {k: v for k, v in wanted.items() if k in taken or k in options}


def baseline_planner_for(domain: Domain, **options: Any) -> Planner | None:
    """A learned policy that stands in for the optimistic baseline (method ``qlearning``;
    Overcooked: a Q-policy), or None for a domain that declares none (the method
    ``optimistic`` plans with the default planner under a fully capable partner)."""
    spec = spec_of(domain)
    path = spec.planners.get('baseline')
    if path is None:
        return None
    return _load(path, f'the baseline planner of domain {spec.name!r}')(domain, **options)


def panel_view_for(domain: Domain) -> Any:
    """How the web panel draws ``domain``'s states (a :class:`~cecm_ros.web.panel_view.
    PanelView`)."""
    spec = spec_of(domain)
    return _load(spec.panel, f'the panel view of domain {spec.name!r}')(domain)


def robot_skills_for(domain: Domain) -> Any:
    """The robot's skill kinds for ``domain`` (a :class:`~cecm_ros.nodes.skill_kinds.
    RobotSkills`)."""
    spec = spec_of(domain)
    return _load(spec.skills, f'the robot skills of domain {spec.name!r}')(domain)

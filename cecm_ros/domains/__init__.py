"""The domains cecm_ros knows, found by name or by the path of a domain file.

Built-in domains are listed here. Another Python package adds its own without editing
this one by declaring an entry point in the group ``cecm_ros.domains`` whose object is
a callable taking the options below and returning a
:class:`~cecm_ros.core.domain.Domain`::

    [project.entry-points."cecm_ros.domains"]
    assembly_cell = "my_package.cell:make_domain"

``load_domain(name_or_path, **options)`` is what every ``cecm`` command (``--domain``)
and every node (its ``domain`` parameter) calls.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from cecm_ros.core.domain import Domain
from cecm_ros.core.errors import ConfigError

ENTRY_POINT_GROUP = 'cecm_ros.domains'
DEFAULT_DOMAIN = 'tidyup'


def _tidyup(household: str | Path | None = None, capabilities: str | Path | None = None,
            **unknown: Any) -> Domain:
    """TidyUP with an optional household file and capability catalogue."""
    _no_unknown_options('tidyup', unknown)
    from cecm_ros.core.capabilities import CapabilityCatalog
    from cecm_ros.domains.tidyup.household import Household
    from cecm_ros.domains.tidyup.model import TidyUpModel

    return TidyUpModel(Household.from_yaml(household) if household else None,
                       CapabilityCatalog.from_yaml(capabilities) if capabilities else None)


def _overcooked(file: str | Path | None = None, **unknown: Any) -> Domain:
    """Overcooked with an optional domain file (kitchens, recipes, capabilities)."""
    _no_unknown_options('overcooked', unknown)
    from cecm_ros.domains.overcooked.model import OvercookedDomain

    return OvercookedDomain(file)


BUILT_IN: dict[str, tuple[Callable[..., Domain], str]] = {
    'tidyup': (_tidyup, 'a robot and a person tidy a household (PDDL, Fast Downward)'),
    'overcooked': (_overcooked, 'two cooks make salads in a grid kitchen (macro actions, '
                                'PUCT MCTS)'),
}


def _no_unknown_options(name: str, unknown: dict[str, Any]) -> None:
    given = {k: v for k, v in unknown.items() if v not in (None, '')}
    if given:
        raise ConfigError(f'domain {name!r} takes no option {", ".join(sorted(given))}')


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
    names = {name: description for name, (_, description) in BUILT_IN.items()}
    for name, entry in _entry_points().items():
        names.setdefault(name, f'from {entry.value}')
    return dict(sorted(names.items()))


def load_domain(spec: str | Path | None = None, **options: Any) -> Domain:
    """The domain named ``spec``: a registered name (default TidyUP) or the path of a
    domain file (YAML, see :mod:`cecm_ros.domains.pddl.file_domain`).

    Options go to the domain's factory (TidyUP: ``household``, ``capabilities``); a
    factory rejects options it does not know. Errors are ConfigErrors that name the
    domain and what was wrong.
    """
    spec = str(spec or DEFAULT_DOMAIN).strip()
    if spec in BUILT_IN:
        return BUILT_IN[spec][0](**options)
    entry = _entry_points().get(spec)
    if entry is not None:
        try:
            factory = entry.load()
        except Exception as error:  # noqa: BLE001 - any import failure is the plug-in's
            raise ConfigError(f'domain {spec!r} ({entry.value}) cannot be loaded: '
                              f'{type(error).__name__}: {error}') from error
        domain = factory(**options)
        if not isinstance(domain, Domain):
            raise ConfigError(f'domain {spec!r} ({entry.value}) returned '
                              f'{type(domain).__name__}, not a cecm_ros Domain')
        return domain
    if '/' in spec or spec.endswith(('.yaml', '.yml')) or Path(spec).is_file():
        _no_unknown_options(spec, options)
        path = Path(spec).expanduser()
        if _is_kitchen_file(path):
            from cecm_ros.domains.overcooked.model import OvercookedDomain

            return OvercookedDomain(path)
        from cecm_ros.domains.pddl.file_domain import FileDomain

        return FileDomain(path)
    raise ConfigError(f'unknown domain {spec!r}; domains: '
                      f'{", ".join(available_domains())}')

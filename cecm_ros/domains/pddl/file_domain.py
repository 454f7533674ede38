"""A user's PDDL domain described by a file, with no Python: ``--domain path/domain.yaml``.

The YAML file names a two-agent PDDL domain file, the objects, the robot and partner
objects, the static facts and cost values, each capability (a gate on one or several
action schemas and some of their arguments, or a static fact of the partner that the
PDDL file already has, ``(can-weld tech)``), the partner types, and how tasks are made
(PDDL problem files, or initial-state and goal templates drawn with a seed).
docs/domains.md walks through one. Every mistake in it is a ConfigError that names the
file, the line and column where the user wrote it, and the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from unified_planning.io import PDDLReader
from unified_planning.model import Problem

from cecm_ros.core.capabilities import Capability, CapabilityCatalog, PartnerType
from cecm_ros.core.domain import HUMAN, ROBOT, Task
from cecm_ros.core.errors import ConfigError, UnknownNameError
from cecm_ros.core.estimator_settings import likelihood_section

from .costs import PDDL_WORDS, declared_predicates, rewrite_costs
from .file_tasks import ProblemCycle, TemplateGenerator
from .model import GroundAction, PddlModel, atom, pddl_name, split_atom
from .positions import YamlPositions, at, atom_tokens, locate, reader_position

FORMAT_KEYS = {'name', 'description', 'pddl', 'agents', 'objects', 'static', 'costs',
               'capabilities', 'partner_types', 'tasks', 'schema_order', 'likelihood'}
# The keys each kind of entry may have: anything else is a misspelling, refused.
CAPABILITY_KEYS = ('name', 'action', 'arguments', 'fact', 'description')
GATE_KEYS = ('action', 'arguments')
PARTNER_TYPE_KEYS = ('description', 'missing')
TASKS_KEYS = ('problems', 'generate')
GENERATE_KEYS = ('initial', 'goal')
# In a capability's fact, this word stands for the partner's object: (can-weld partner).
PARTNER_WORD = 'partner'
# Tasks a loaded domain plans with a fully capable partner to prove it can be run.
TASKS_CHECKED = 3


class FileDomain(PddlModel):
    """A PDDL domain configured by a YAML file (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.load_warnings: list[str] = []    # what loading it found doubtful
        spec = self._read_yaml()
        self.spec = spec
        self.name = str(spec.get('name') or self.path.parent.name or self.path.stem)
        self.description = str(spec.get('description', ''))
        self.likelihood_defaults = {**type(self).likelihood_defaults,
                                    **likelihood_section(spec.get('likelihood'),
                                                         self._at('likelihood', key=True))}
        pddl = spec.get('pddl')
        if not isinstance(pddl, str):
            raise self.entry_error(('pddl',), '"pddl" must name the PDDL domain file')
        pddl_file = (self.path.parent / pddl).resolve()
        if not pddl_file.is_file():
            raise self.entry_error(('pddl',), f'pddl: no such file {pddl_file}')
        agents = self.mapping(spec.get('agents'), ('agents',), 'agents')
        if set(agents) != {'robot', 'partner'}:
            raise self.entry_error(('agents',), 'agents: give the PDDL objects of "robot" '
                                   f'and "partner", got {sorted(agents)}')
        roles = {str(agents['robot']): ROBOT, str(agents['partner']): HUMAN}
        if len(roles) != 2:
            raise self.entry_error(('agents',), 'agents: robot and partner must be two '
                                   'objects')
        self._objects = {str(k): self.strings(v, ('objects', k), f'objects: {k}')
                         for k, v in self.mapping(spec.get('objects'), ('objects',),
                                                  'objects').items()}
        listed = [o for names in self._objects.values() for o in names]
        for role in ('robot', 'partner'):
            if str(agents[role]) not in listed:
                raise self.entry_error(('agents', role), f'agents: {role}: {agents[role]!r} '
                                       'is not an object listed under objects; objects: '
                                       f'{", ".join(listed)}')
        seen: set[str] = set()
        for kind, names in self._objects.items():
            for number, name in enumerate(names):
                if name in seen:
                    raise self.entry_error(('objects', kind, number),
                                           f'objects: {name} listed more than once (an '
                                           'object has one type)')
                seen.add(name)
        self._static_facts: set[str] = set()
        self._static_entries: dict[str, tuple] = {}
        for number, text in enumerate(self.strings(spec.get('static', []), ('static',),
                                                   'static')):
            fact = self._atom(text, ('static', number), 'static')
            self._static_facts.add(fact)
            self._static_entries[fact] = ('static', number)
        costs = self.mapping(spec.get('costs', {}), ('costs',), 'costs')
        self._default_cost = costs.get('default')
        self._costs: dict[str, Any] = {}
        self._cost_entries: dict[str, tuple] = {}
        for key, value in costs.items():
            if key != 'default':
                term = self._atom(str(key), ('costs', key), 'costs')
                self._costs[term] = value
                self._cost_entries[term] = ('costs', key)
        self._schema_order = self.strings(spec.get('schema_order', []), ('schema_order',),
                                          'schema_order')
        self.schema_rank = {schema: rank for rank, schema in enumerate(self._schema_order)}
        self._partner_object = str(agents['partner'])
        catalog = self._read_capabilities(spec)
        try:
            super().__init__(pddl_file, catalog, roles)
        except ConfigError as error:
            raise self._named(error) from None
        except Exception as error:  # noqa: BLE001 - the user's PDDL, read by unified-planning
            raise ConfigError(f'{pddl_file}: cannot read the PDDL domain: '
                              f'{type(error).__name__}: {error}') from None
        self._check_schema_order()
        self._check_static_and_costs()
        self._task_spec = self.mapping(spec.get('tasks'), ('tasks',), 'tasks')
        self.known_keys(self._task_spec, TASKS_KEYS, ('tasks',), 'tasks')
        self._problem_files: dict[str, tuple[Path, str]] = {}
        self._problem_tasks = self._read_problems()
        if not self._problem_tasks:
            TemplateGenerator(self, self._task_spec['generate'], 0).check()
            # What the templates give together (a goal that always holds): draw some now.
            self.task_generator(0).tasks(TASKS_CHECKED)

    # ---------------------------------------------------------- where, and helpers
    def _at(self, *path: Any, key: bool = False) -> str:
        """``domain.yaml:line:column`` of an entry."""
        return at(self.path, self._yaml.of(*path, key=key))

    def entry_error(self, path: tuple, message: str, key: bool = False) -> ConfigError:
        """An error about the entry at ``path`` of domain.yaml, naming where it is."""
        return ConfigError(f'{self._at(*path, key=key)}: {message}')

    def mapping(self, value: Any, path: tuple, label: str) -> dict:
        if not isinstance(value, dict):
            raise self.entry_error(path, f'{label}: expected a mapping, got '
                                   f'{type(value).__name__}')
        return value

    def strings(self, value: Any, path: tuple, label: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.entry_error(path, f'{label}: expected a list of names')
        return list(value)

    def known_keys(self, entry: dict, known: Sequence[str], path: tuple, label: str) -> None:
        """Refuse a key no reader looks at: a misspelt key would silently mean its default."""
        unknown = [str(k) for k in entry if k not in known]
        if unknown:
            keys = ', '.join(repr(k) for k in unknown)
            raise self.entry_error((*path, unknown[0]),
                                   f'{label}: unknown key{"s" if len(unknown) > 1 else ""} '
                                   f'{keys}; known: {", ".join(known)}', key=True)

    def _atom(self, text: str, path: tuple, label: str) -> str:
        try:
            return atom(*split_atom(text))
        except UnknownNameError as error:
            raise self.entry_error(path, f'{label}: {error}') from None

    def _named(self, error: ConfigError) -> ConfigError:
        """The error naming the file it is about: the PDDL file or this one, once."""
        message = str(error)
        if message.startswith((str(self.path), str(self.domain_file))):
            return error
        return ConfigError(f'{self.path}: {message}')

    # ------------------------------------------------------------------ the PDDL
    def _planning_text(self, text: str) -> str:
        """The PDDL file read as written first, so that a mistake is named where the user
        wrote it, then with its costs rewritten for the planner (costs.py)."""
        parsed = self._read_pddl(text)
        rewrite = rewrite_costs(text, self.domain_file)
        self._constant_costs = rewrite.constants
        if not rewrite.rewritten:
            self.__dict__['_domain_problem'] = parsed   # the planner's text is the user's
        return rewrite.text

    def _read_pddl(self, text: str, problem: str | None = None,
                   file: Path | None = None) -> Problem:
        """The domain (or, with ``problem``, a problem file) read by unified-planning; a
        mistake is refused at its line and column in the file, with what is declared
        when it names something that is not."""
        file = file or self.domain_file
        try:
            with self._reader_lock:
                if problem is None:
                    return PDDLReader().parse_problem_string(text)
                return PDDLReader().parse_problem_string(text, problem)
        except Exception as error:  # noqa: BLE001 - the user's PDDL
            what = 'domain' if problem is None else 'problem'
            message = f'{type(error).__name__}: {error}'.replace('\n', ' ')
            position = reader_position(message)
            hint = ''
            head = str(error).split('Not able to handle: (', 1)
            if problem is None and len(head) == 2:
                name = head[1].split()[0].rstrip(')').lower()
                predicates, functions = declared_predicates(text)
                if predicates and name not in predicates | functions | PDDL_WORDS:
                    hint = (f' (no predicate {name!r} is declared; predicates: '
                            f'{", ".join(sorted(predicates))})')
            raise ConfigError(f'{at(file, position)}: cannot read the PDDL {what}: '
                              f'{message}{hint}') from None

    def _ground_actions(self) -> tuple[GroundAction, ...]:
        self._check_gates()   # before grounding, which reads them
        self._check_fact_gates()
        return super()._ground_actions()

    def _check_gates(self) -> None:
        """Every gate names an action schema of the PDDL file, and arguments it has with
        objects of their types."""
        schemas = {a.name: a for a in self._domain_problem.actions}
        for gate in self._gates:
            label = f'capability {gate["name"]!r}'
            action = schemas.get(gate['action'])
            if action is None:
                raise self.entry_error(gate['path'], f'{label} gates an unknown action '
                                       f'{gate["action"]!r}; actions: '
                                       f'{", ".join(sorted(schemas))}')
            parameters = {p.name: p for p in action.parameters}
            for argument, value in gate['arguments'].items():
                where = (*gate['arguments_at'], gate['written'][argument])
                if argument not in parameters:
                    raise self.entry_error(
                        where, f'{label}: action {gate["action"]!r} has no argument '
                        f'{argument!r}; arguments: {", ".join(parameters)} (each written '
                        'with or without "?")', key=True)
                kind = parameters[argument].type.name
                allowed = self.objects_of_kind(kind, where, label)
                if value not in allowed:
                    raise self.entry_error(
                        where, f'{label}: {value!r} is not an object of type {kind!r} '
                        f'(argument {argument!r} of {gate["action"]!r}: '
                        f'{", ".join(allowed)})')

    def _check_schema_order(self) -> None:
        known = {a.name for a in self._domain_problem.actions}
        for number, schema in enumerate(self._schema_order):
            if schema not in known:
                raise self.entry_error(('schema_order', number),
                                       f'schema_order: {schema!r} is no action of the PDDL '
                                       f'domain; actions: {", ".join(sorted(known))}')

    @property
    def _static_predicates(self) -> set[str]:
        return {f.name for f in self._domain_problem.get_static_fluents()}

    def _check_fact_gates(self) -> None:
        """Every capability fact is a static fact of the partner, not under static."""
        for fact, (index, path) in self._fact_entries.items():
            name, *args = split_atom(fact)
            label = f'capabilities[{path[1] + 1}] ({self.catalog.names[index]}): fact: {fact}'
            self._check_static_fact(fact, path, label, '; a capability is a fact no action '
                                    'changes')
            if self._partner_object not in args:
                raise self.entry_error(path, f'{label} is not about the partner '
                                       f'{self._partner_object!r} (write the partner\'s '
                                       f'object, or "{PARTNER_WORD}")')
            if fact in self._static_facts:
                raise self.entry_error(self._static_entries[fact],
                                       f'static: {fact} is the fact of capability '
                                       f'{self.catalog.names[index]!r}, which the package '
                                       'varies; leave it out of static')

    def _check_static_fact(self, fact: str, path: tuple, label: str, changed: str) -> None:
        """``fact`` is of a predicate of the PDDL file no action changes, with arguments
        of its types; ``changed`` ends the refusal of one that some action changes."""
        name, *args = split_atom(fact)
        fluent = {f.name: f for f in self._domain_problem.fluents}.get(name)
        if fluent is None or not fluent.type.is_bool_type():
            raise self.entry_error(path, f'{label}: no predicate {name!r} in the PDDL domain; '
                                   f'predicates: {", ".join(self._predicates())}')
        if name not in self._static_predicates:
            raise self.entry_error(path, f'{label}: {name!r} is changed by the actions '
                                   f'{", ".join(self._changers(name))}{changed}')
        self._check_arguments(fluent, args, path, label)

    def _predicates(self) -> list[str]:
        return sorted(f.name for f in self._domain_problem.fluents if f.type.is_bool_type())

    def _changers(self, predicate: str) -> list[str]:
        return sorted({a.name for a in self._domain_problem.actions for e in a.effects
                       if e.fluent.is_fluent_exp() and e.fluent.fluent().name == predicate})

    def _check_static_and_costs(self) -> None:
        """Every static fact is of a predicate no action changes, and every cost names a
        cost function of the domain, with objects of the right types."""
        domain = self._domain_problem
        types = sorted(t.name for t in domain.user_types)
        for kind in self._objects:
            if kind not in types:
                raise self.entry_error(('objects', kind), f'objects: {kind!r} is no type of '
                                       f'the PDDL domain; types: {", ".join(types) or "none"}',
                                       key=True)
        for fact in sorted(self._static_facts):
            self._check_static_fact(fact, self._static_entries[fact], f'static: {fact}',
                                    ', so it is no static fact; a task says where it starts '
                                    '(the initial state of a problem or template)')
        fluents = {f.name: f for f in domain.fluents}
        functions = {n: f for n, f in fluents.items() if not f.type.is_bool_type()
                     and n != 'total-cost' and n not in self._constant_costs}
        for term in self._costs:
            name, *args = split_atom(term)
            path = self._cost_entries[term]
            label = f'costs: {term}'
            if name not in functions:
                known = ', '.join(sorted(functions)) or 'none (its costs are numbers)'
                raise self.entry_error(path, f'{label}: no cost function {name!r} in the '
                                       f'PDDL domain; cost functions: {known}', key=True)
            self._check_arguments(functions[name], args, path, label, key=True)
            self._cost_value(name, tuple(args))   # checks the value
        if self._default_cost is not None:
            self._checked_cost('default', self._default_cost)

    def _check_arguments(self, fluent, args: Sequence[str], path: tuple, label: str,
                         key: bool = False) -> None:
        problem = self._arguments_problem(fluent, args)
        if problem:
            raise self.entry_error(path, f'{label}: {problem}', key=key)

    def _arguments_problem(self, fluent, args: Sequence[str]) -> str | None:
        """What is wrong with ``args`` for ``fluent`` (its arity, or an object of the
        wrong type), naming its parameters and their types; None when nothing is."""
        signature = fluent.signature
        if len(args) != len(signature):
            wanted = ' '.join(f'?{p.name} - {p.type.name}' for p in signature)
            return (f'{fluent.name!r} takes {len(signature)} argument'
                    f'{"" if len(signature) == 1 else "s"} ({wanted}), got {len(args)}')
        for value, parameter in zip(args, signature):
            allowed = self._objects_of_type(parameter.type.name)
            if value not in allowed:
                return (f'{value!r} is not an object of type {parameter.type.name!r} '
                        f'({", ".join(allowed)})')
        return None

    def fact_problem(self, parts: Sequence[str], part: str) -> str:
        """Why ``parts`` is no fact a task may start from or ask for (templates)."""
        fact = atom(*parts)
        name, *args = parts
        fluent = {f.name: f for f in self._domain_problem.fluents}.get(name)
        if fluent is None or not fluent.type.is_bool_type():
            return (f'{fact}: no predicate {name!r} in the PDDL domain; predicates: '
                    f'{", ".join(self._predicates())}')
        problem = self._arguments_problem(fluent, args)
        if problem:
            return f'{fact}: {problem}'
        if fact in self._fact_gates:
            return (f'{fact} is the fact of capability '
                    f'{self.catalog.names[self._fact_gates[fact]]!r}; the partner type '
                    'says whether it holds, not a task')
        return (f'{fact} is a static fact (no action changes {name!r}): it is the same in '
                f'every task, so it goes under static, not in a task\'s {part}')

    @property
    def proposition_set(self):
        """The facts a task may start from or ask for."""
        return self._prop_index.keys()

    # ------------------------------------------------------------------ reading
    def _read_yaml(self) -> dict:
        try:
            text = self.path.read_text()
        except OSError as error:
            raise ConfigError(f'cannot read domain file {self.path}: {error.strerror}') \
                from None
        self._yaml = YamlPositions(text)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            mark = getattr(error, 'problem_mark', None)
            position = (mark.line + 1, mark.column + 1) if mark is not None else None
            words = ' '.join(str(w) for w in (getattr(error, 'context', None),
                                              getattr(error, 'problem', None)) if w)
            raise ConfigError(f'{at(self.path, position)}: not valid YAML: '
                              f'{words or error}') from None
        data = self.mapping(data, (), 'the domain file')
        unknown = [str(k) for k in data if k not in FORMAT_KEYS]
        if unknown:
            raise self.entry_error((unknown[0],), f'unknown entries {", ".join(unknown)}; '
                                   f'known: {", ".join(sorted(FORMAT_KEYS))}', key=True)
        return data

    def _read_capabilities(self, spec: dict) -> CapabilityCatalog:
        """The catalogue, and each capability's gates: action schemas with argument values
        (``self._gates``) or static facts of the partner (``self._fact_gates``)."""
        entries = spec.get('capabilities')
        if not isinstance(entries, list) or not entries:
            raise self.entry_error(('capabilities',), 'capabilities: expected a non-empty '
                                   'list')
        capabilities: list[Capability] = []
        self._gates: list[dict] = []
        self._fact_gates: dict[str, int] = {}
        self._fact_entries: dict[str, tuple[int, tuple]] = {}
        for index, entry in enumerate(entries):
            path = ('capabilities', index)
            label = f'capabilities[{index + 1}]'
            entry = self.mapping(entry, path, label)
            name = entry.get('name')
            if isinstance(name, str):
                label = f'{label} ({name})'
            self.known_keys(entry, CAPABILITY_KEYS, path, label)
            if not isinstance(name, str):
                raise self.entry_error(path, f'{label}: needs a "name"')
            if name in (c.name for c in capabilities):
                raise self.entry_error((*path, 'name'), f'{label}: capability {name!r} is '
                                       'named more than once')
            if ('action' in entry) == ('fact' in entry):
                raise self.entry_error(path, f'{label}: give the "action" (or list of '
                                       'actions) it gates, or the partner\'s "fact" it is '
                                       '(one of them)')
            if 'fact' in entry:
                kind, group = self._read_facts(entry['fact'], index, path, label)
            else:
                kind, group = self._read_schemas(entry, index, path, label)
            capabilities.append(Capability(name, kind, group,
                                           str(entry.get('description', ''))))
        known = {c.name for c in capabilities}
        partner_types = {}
        for type_name, entry in self.mapping(spec.get('partner_types', {}),
                                             ('partner_types',), 'partner_types').items():
            path = ('partner_types', type_name)
            label = f'partner_types: {type_name}'
            entry = self.mapping(entry, path, label)
            self.known_keys(entry, PARTNER_TYPE_KEYS, path, label)
            missing = self.strings(entry.get('missing', []), (*path, 'missing'), label)
            for number, capability in enumerate(missing):
                if capability not in known:
                    raise self.entry_error((*path, 'missing', number),
                                           f'partner type {type_name!r} names an unknown '
                                           f'capability {capability!r}; capabilities: '
                                           f'{", ".join(sorted(known))}')
            partner_types[str(type_name)] = PartnerType(
                str(type_name), str(entry.get('description', '')), tuple(missing))
        try:
            return CapabilityCatalog(capabilities, partner_types)
        except ConfigError as error:
            raise self.entry_error(('capabilities',), str(error)) from None

    def _read_schemas(self, entry: dict, index: int, path: tuple, label: str
                      ) -> tuple[str, str]:
        """``action: move`` or ``action: [calibrate, {action: take_image, arguments:
        {c: camera}}]``, each schema with the entry's ``arguments`` unless it gives its
        own; the capability's kind (its schemas) and group (its argument values)."""
        actions = entry['action']
        listed = isinstance(actions, list)
        if not listed:
            actions = [actions]
        if not actions:
            raise self.entry_error((*path, 'action'), f'{label}: action: expected an '
                                   'action or a non-empty list of actions')
        shared = entry.get('arguments', {})
        schemas, values = [], []
        for number, item in enumerate(actions):
            where = (*path, 'action', number) if listed else (*path, 'action')
            arguments, arguments_at = shared, (*path, 'arguments')
            if isinstance(item, dict):
                self.known_keys(item, GATE_KEYS, where, f'{label}: action[{number + 1}]')
                arguments, arguments_at = item.get('arguments', {}), (*where, 'arguments')
                item = item.get('action')
            if not isinstance(item, str):
                raise self.entry_error(where, f'{label}: action: expected the name of an '
                                       f'action schema, got {item!r}')
            arguments = self.mapping(arguments, arguments_at, f'{label}: arguments')
            self._gates.append({
                'index': index, 'name': entry['name'], 'action': item, 'path': where,
                'label': label, 'arguments_at': arguments_at,
                'arguments': {str(k).lstrip('?'): str(v) for k, v in arguments.items()},
                'written': {str(k).lstrip('?'): str(k) for k in arguments}})
            schemas.append(item)
            values += [str(v) for v in arguments.values() if str(v) not in values]
        kind = '+'.join(dict.fromkeys(schemas))
        return kind, ','.join(values) or kind

    def _read_facts(self, value: Any, index: int, path: tuple, label: str
                    ) -> tuple[str, str]:
        """``fact: (can-weld tech)`` (or a list of such facts): static facts of the
        partner that preconditions of the PDDL file ask for; the capability's kind (the
        predicates) and group (their other arguments)."""
        texts = value if isinstance(value, list) else [value]
        if not texts or not all(isinstance(t, str) for t in texts):
            raise self.entry_error((*path, 'fact'), f'{label}: fact: expected a fact of the '
                                   'partner, (can-weld partner), or a list of them')
        listed = isinstance(value, list)
        objects = {o for names in self._objects.values() for o in names}
        kinds, values = [], []
        for number, text in enumerate(texts):
            where = (*path, 'fact', number) if listed else (*path, 'fact')
            name, *args = split_atom(self._atom(text, where, f'{label}: fact'))
            args = [self._partner_object if a == PARTNER_WORD and a not in objects else a
                    for a in args]
            fact = atom(name, *args)
            if fact in self._fact_gates:
                other = self._fact_entries[fact][1][1]
                raise self.entry_error(where, f'{label}: fact {fact} is capability '
                                       f'{other + 1}\'s too; a fact is one capability')
            self._fact_gates[fact] = index
            self._fact_entries[fact] = (index, where)
            kinds.append(name)
            values += [a for a in args if a != self._partner_object and a not in values]
        kind = '+'.join(dict.fromkeys(kinds))
        return kind, ','.join(values) or kind

    # -------------------------------------------------------------- PddlModel hooks
    def _objects_of_type(self, type_name: str) -> tuple[str, ...]:
        domain = self._domain_problem
        wanted = {type_name}
        for user_type in domain.user_types:   # subtypes count as their parents
            ancestors, father = [], user_type.father
            while father is not None:
                ancestors.append(father.name)
                father = father.father
            if type_name in ancestors:
                wanted.add(user_type.name)
        names: list[str] = []
        for name in sorted(wanted):
            names += [o for o in self._objects.get(name, []) if o not in names]
        if not names and type_name != 'object':
            raise self.entry_error(('objects',), f'objects: no objects of PDDL type '
                                   f'{type_name!r}')
        return tuple(names)

    def objects_of_kind(self, kind: str, path: tuple, label: str) -> tuple[str, ...]:
        """The objects of a type a user names (a template's for_each): refused, at the
        entry, when the PDDL file has no such type or no object has it."""
        types = sorted(t.name for t in self._domain_problem.user_types)
        if kind not in types:
            raise self.entry_error(path, f'{label}: {kind!r} is no type of the PDDL '
                                   f'domain; types: {", ".join(types)}')
        try:
            return self._objects_of_type(kind)
        except ConfigError:
            raise self.entry_error(path, f'{label}: no objects of type {kind!r} are listed '
                                   'under objects') from None

    def _static_value(self, predicate: str, args: tuple[str, ...]) -> bool:
        return atom(predicate, *args) in self._static_facts

    def _cost_value(self, fluent: str, args: tuple[str, ...]) -> float:
        term = atom(fluent, *args)
        value = self._costs.get(term, self._default_cost)
        if value is None:
            raise self.entry_error(('costs',), f'costs: no value for {term} and no default')
        return self._checked_cost(term, value)

    def _checked_cost(self, term: str, value: Any) -> float:
        if isinstance(value, bool) or not (isinstance(value, (int, float))
                                           and float(value).is_integer()
                                           and 1 <= value <= 20):
            raise self.entry_error(self._cost_entries.get(term, ('costs', term)),
                                   f'costs: {term} must be a whole number from 1 to 20, got '
                                   f'{value!r}')
        return float(value)

    def _capability_precondition(self, predicate: str, args: tuple[str, ...]
                                 ) -> tuple[bool, int | None]:
        """A fact some capability is (``fact:``); every other fact is the world's, the
        robot's ``(can-weld robot)`` included (it holds as ``static`` says)."""
        index = self._fact_gates.get(atom(predicate, *args))
        return index is not None, index

    def _schema_gate(self, schema: str, binding: dict[str, str]) -> int | None:
        found = sorted({gate['index'] for gate in self._gates if gate['action'] == schema
                        and all(binding.get(k) == v for k, v in gate['arguments'].items())})
        if len(found) > 1:
            names = ', '.join(self.catalog.names[i] for i in found)
            first = next(g for g in self._gates if g['index'] == found[-1])
            raise self.entry_error(first['path'], f'capabilities {names} all gate '
                                   f'({schema} {" ".join(binding.values())}); one action may '
                                   'need one capability')
        return found[0] if found else None

    def _where(self) -> str:
        return f'domain {self.name!r} ({self.path})'

    def rebuild_arguments(self) -> tuple:
        # Absolute: planning workers run in a directory of their own.
        return (self.path.resolve(),)

    # ------------------------------------------------------------------- tasks
    def _read_problems(self) -> list[Task]:
        files = self._task_spec.get('problems')
        if files is not None and 'generate' in self._task_spec:
            raise self.entry_error(('tasks',), 'tasks: give either "problems" or '
                                   '"generate", not both')
        if files is None:
            if 'generate' not in self._task_spec:
                raise self.entry_error(('tasks',), 'tasks: give "problems" (PDDL problem '
                                       'files) or "generate" (templates)')
            generate = self.mapping(self._task_spec['generate'], ('tasks', 'generate'),
                                    'tasks: generate')
            self.known_keys(generate, GENERATE_KEYS, ('tasks', 'generate'),
                            'tasks: generate')
            return []
        tasks = []
        for number, name in enumerate(self.strings(files, ('tasks', 'problems'),
                                                   'tasks: problems')):
            path = (self.path.parent / name).resolve()
            try:
                text = path.read_text()
            except OSError as error:
                raise self.entry_error(('tasks', 'problems', number),
                                       f'tasks: problems[{number + 1}]: cannot read {path}: '
                                       f'{error.strerror}') from None
            problem = self._read_pddl(self._domain_text, text, path)
            task = self._task_of_problem(problem, path, text)
            self._problem_files[task.task_id] = (path, text)
            tasks.append(task)
        if not tasks:
            raise self.entry_error(('tasks', 'problems'), 'tasks: problems is empty')
        return tasks

    def _task_of_problem(self, problem: Problem, path: Path, text: str) -> Task:
        """The task of a problem file. Its objects, static facts and costs come from
        domain.yaml, so the file must agree with it; its :metric is not read (plans
        always minimise the total cost); the partner's capability facts are not read
        either (the partner type says them)."""
        def fail(tokens: list[str] | None, message: str) -> ConfigError:
            return ConfigError(f'{at(path, locate(text, tokens) if tokens else None)}: '
                               f'{message}')

        known = set(self.all_objects)
        undeclared = [o.name for o in problem.all_objects if o.name not in known]
        if undeclared:
            raise fail([undeclared[0]], f'objects {", ".join(undeclared)} are not listed '
                       f'under objects in {self.path} (every task has the objects listed '
                       'there)')
        dynamic = set(self.propositions)
        initial, static = set(), set()
        for fluent, value in problem.explicit_initial_values.items():
            text_of = atom(fluent.fluent().name, *(str(a) for a in fluent.args))
            if not fluent.type.is_bool_type():
                if fluent.fluent().name == 'total-cost' and value.is_constant() \
                        and float(value.constant_value()) == 0:
                    continue
                raise fail(['(', '=', *atom_tokens(text_of)],
                           f'(= {text_of} {value}): costs are not read from problem files; '
                           f'give them under costs in {self.path} (or as numbers in the PDDL '
                           'domain)')
            if not value.is_true() or text_of in self._fact_gates:
                continue
            if text_of in dynamic:
                initial.add(text_of)
            elif text_of in self._static_facts:
                static.add(text_of)
            elif fluent.fluent().name in self._static_predicates:
                raise fail(atom_tokens(text_of), f'{text_of} is not under static in '
                           f'{self.path}: {fluent.fluent().name!r} is static (no action '
                           'changes it), so its facts are the same in every task and all '
                           'of them are listed under static')
            else:
                raise fail(atom_tokens(text_of), f'{text_of} is neither a fact of the '
                           f'domain nor one of the static facts of {self.path}')
        if static and static != self._static_facts:
            missing = sorted(self._static_facts - static)
            raise fail(['(', ':init'], f'the static facts differ from those under static '
                       f'in {self.path}: it lacks {" ".join(missing)} (a problem lists all '
                       'of them or none)')
        goals: list = []
        for goal in problem.goals:
            goals.extend(goal.args if goal.is_and() else [goal])
        goal_atoms = set()
        for goal in goals:
            if not goal.is_fluent_exp():
                raise fail(['(', ':goal'], f'only conjunctions of facts are supported as '
                           f'goals, got {goal}')
            goal_atoms.add(atom(goal.fluent().name, *(str(a) for a in goal.args)))
        task = Task(pddl_name(path.stem), frozenset(initial), frozenset(goal_atoms))
        try:
            self.validate_task(task)
        except ConfigError as error:
            raise fail(['(', ':goal'], str(error)) from None
        return task

    def task_origin(self, task: Task) -> str:
        """Where a task of this domain comes from, for messages: its problem file at its
        goal, or the templates (``file:line:column``)."""
        base = task.task_id
        for task_id, (path, text) in self._problem_files.items():
            if base == task_id or base.startswith(f'{task_id}-'):
                return f'{at(path, locate(text, ["(", ":goal"]))}: task {task.task_id}'
        return (f'{self._at("tasks", "generate", key=True)}: tasks: generate: task '
                f'{task.task_id}')

    @property
    def problem_tasks(self) -> list[Task]:
        """The tasks of the file's PDDL problems (empty when tasks are generated)."""
        return list(self._problem_tasks)

    def task_generator(self, seed: int):
        if self._problem_tasks:
            return ProblemCycle(self._problem_tasks, seed)
        return TemplateGenerator(self, self._task_spec['generate'], seed)

    def problem_text(self, task: Task) -> str:
        domain = self._domain_problem
        objects = ' '.join(f'{" ".join(names)} - {kind}' for kind, names in
                           sorted(self._objects.items()))
        metric = self.has_action_costs
        lines = [f'(define (problem {pddl_name(task.task_id)}) (:domain {domain.name})',
                 f' (:objects {objects})', ' (:init' + (' (= (total-cost) 0)' if metric else '')]
        lines += [f'  {a}' for a in sorted(task.initial)]
        # The partner's capability facts hold here: conditioned_problem takes them away.
        lines += [f'  {fact}' for fact in sorted(self._static_facts | set(self._fact_gates))]
        lines += [f'  (= {term} {value})' for term, value in self.planner_costs.items()]
        lines.append(' )')
        lines.append(' (:goal (and ' + ' '.join(sorted(task.goal)) + '))')
        lines.append(' (:metric minimize (total-cost)))' if metric else ')')
        return '\n'.join(lines)

    def conditioned_problem(self, base: Problem, capabilities: np.ndarray) -> Problem:
        """The induced problem: a partner's action gated by a missing capability gets a
        precondition no state meets, and a missing capability's fact is false (the
        search path restricts operators directly)."""
        from unified_planning.shortcuts import FALSE, Equals, Not, Or

        capabilities = self.catalog.check_vector(capabilities)
        problem = base.clone()
        partner = problem.object(self.agent_objects[HUMAN])
        missing = set(np.flatnonzero(~capabilities).tolist())
        for gate in self._gates:
            if gate['index'] not in missing:
                continue
            action = problem.action(gate['action'])
            parameters = {p.name: p for p in action.parameters}
            actor = next(p for p in action.parameters
                         if p.type.name in _type_and_ancestors(partner.type))
            escape = [Not(Equals(actor, partner))]
            escape += [Not(Equals(parameters[k], problem.object(v)))
                       for k, v in gate['arguments'].items()]
            action.add_precondition(Or(*escape) if escape else FALSE())
        for fact, index in self._fact_gates.items():
            if index in missing:
                name, *args = split_atom(fact)
                fluent = problem.fluent(name)
                problem.set_initial_value(fluent(*(problem.object(a) for a in args)), False)
        return problem

    def describe(self) -> str:
        return f'{self.name} ({self.path})'


def _type_and_ancestors(kind) -> set[str]:
    names = set()
    while kind is not None:
        names.add(kind.name)
        kind = kind.father
    return names

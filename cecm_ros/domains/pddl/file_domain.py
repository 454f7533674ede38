"""A user's PDDL domain described by a file, with no Python: ``--domain path/domain.yaml``.

The YAML file names a two-agent PDDL domain file, the objects, the robot and partner
objects, the static facts and cost values, each capability as a gate on an action schema
and some of its arguments, the partner types, and how tasks are made (PDDL problem files,
or initial-state and goal templates drawn with a seed). docs/domains.md walks through
one. Every mistake in it is a ConfigError that names the file and the entry.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from unified_planning.io import PDDLReader
from unified_planning.model import Problem

from cecm_ros.core.capabilities import Capability, CapabilityCatalog, PartnerType
from cecm_ros.core.domain import HUMAN, ROBOT, Task
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.likelihood import likelihood_section

from .costs import rewrite_costs
from .model import PddlModel, atom, pddl_name, split_atom

FORMAT_KEYS = {'name', 'description', 'pddl', 'agents', 'objects', 'static', 'costs',
               'capabilities', 'partner_types', 'tasks', 'schema_order', 'likelihood'}
# The keys each kind of entry may have: anything else is a misspelling, refused.
CAPABILITY_KEYS = ('name', 'action', 'arguments', 'description')
PARTNER_TYPE_KEYS = ('description', 'missing')
TASKS_KEYS = ('problems', 'generate')
GENERATE_KEYS = ('initial', 'goal')
TEMPLATE_KEYS = ('fact', 'one_of', 'some_of', 'count', 'for_each')
# Tasks a loaded domain plans with a fully capable partner to prove it can be run.
TASKS_CHECKED = 3


def _mapping(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: expected a mapping, got {type(value).__name__}')
    return value


def _known_keys(entry: dict, known: Sequence[str], where: str) -> None:
    """Refuse a key no reader looks at: a misspelt key would silently mean its default."""
    unknown = [str(k) for k in entry if k not in known]
    if unknown:
        keys = ', '.join(repr(k) for k in unknown)
        raise ConfigError(f'{where}: unknown key{"s" if len(unknown) > 1 else ""} {keys}; '
                          f'known: {", ".join(known)}')


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{where}: expected a list of names')
    return list(value)


class FileDomain(PddlModel):
    """A PDDL domain configured by a YAML file (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        spec = self._read_yaml()
        self.spec = spec
        self.name = str(spec.get('name') or self.path.parent.name or self.path.stem)
        self.description = str(spec.get('description', ''))
        self.likelihood_defaults = {**type(self).likelihood_defaults,
                                    **likelihood_section(spec.get('likelihood'),
                                                         str(self.path))}
        pddl = spec.get('pddl')
        if not isinstance(pddl, str):
            raise ConfigError(f'{self.path}: "pddl" must name the PDDL domain file')
        pddl_file = (self.path.parent / pddl).resolve()
        if not pddl_file.is_file():
            raise ConfigError(f'{self.path}: pddl: no such file {pddl_file}')
        agents = _mapping(spec.get('agents'), f'{self.path}: agents')
        if set(agents) != {'robot', 'partner'}:
            raise ConfigError(f'{self.path}: agents: give the PDDL objects of "robot" and '
                              f'"partner", got {sorted(agents)}')
        roles = {str(agents['robot']): ROBOT, str(agents['partner']): HUMAN}
        if len(roles) != 2:
            raise ConfigError(f'{self.path}: agents: robot and partner must be two objects')
        self._objects = {str(k): _strings(v, f'{self.path}: objects: {k}')
                         for k, v in _mapping(spec.get('objects'),
                                              f'{self.path}: objects').items()}
        listed = [o for names in self._objects.values() for o in names]
        for role in ('robot', 'partner'):
            if str(agents[role]) not in listed:
                raise ConfigError(f'{self.path}: agents: {role}: {agents[role]!r} is not an '
                                  f'object listed under objects; objects: '
                                  f'{", ".join(listed)}')
        twice = sorted({o for o in listed if listed.count(o) > 1})
        if twice:
            raise ConfigError(f'{self.path}: objects: {", ".join(twice)} listed more than once '
                              '(an object has one type)')
        self._static_facts = {atom(*split_atom(f)) for f in
                              _strings(spec.get('static', []), f'{self.path}: static')}
        costs = _mapping(spec.get('costs', {}), f'{self.path}: costs')
        self._default_cost = costs.get('default')
        self._costs = {atom(*split_atom(k)): v for k, v in costs.items() if k != 'default'}
        order = _strings(spec.get('schema_order', []), f'{self.path}: schema_order')
        self.schema_rank = {schema: rank for rank, schema in enumerate(order)}
        catalog, self._gates = self._read_capabilities(spec)
        try:
            super().__init__(pddl_file, catalog, roles)
        except ConfigError as error:
            raise self._named(error) from None
        except Exception as error:  # noqa: BLE001 - a parse error of the user's PDDL
            raise ConfigError(f'{pddl_file}: cannot read the PDDL domain: '
                              f'{type(error).__name__}: {error}') from None
        self._check_objects_and_gates()
        self._check_static_and_costs()
        self._task_spec = _mapping(spec.get('tasks'), f'{self.path}: tasks')
        _known_keys(self._task_spec, TASKS_KEYS, f'{self.path}: tasks')
        self._problem_tasks = self._read_problems()
        if not self._problem_tasks:
            # A template's mistakes show when tasks are drawn: draw the first ones now.
            self.task_generator(0).tasks(TASKS_CHECKED)

    def _named(self, error: ConfigError) -> ConfigError:
        """The error naming the file it is about: the PDDL file or this one, once."""
        message = str(error)
        if message.startswith((str(self.path), str(self.domain_file))):
            return error
        return ConfigError(f'{self.path}: {message}')

    def _planning_text(self, text: str) -> str:
        rewrite = rewrite_costs(text, self.domain_file)
        self._constant_costs = rewrite.constants
        return rewrite.text

    # ------------------------------------------------------------------ reading
    def _read_yaml(self) -> dict:
        try:
            data = yaml.safe_load(self.path.read_text())
        except OSError as error:
            raise ConfigError(f'cannot read domain file {self.path}: {error.strerror}') \
                from None
        except yaml.YAMLError as error:
            raise ConfigError(f'{self.path}: not valid YAML: {error}') from None
        data = _mapping(data, str(self.path))
        unknown = set(data) - FORMAT_KEYS
        if unknown:
            raise ConfigError(f'{self.path}: unknown entries {", ".join(sorted(unknown))}; '
                              f'known: {", ".join(sorted(FORMAT_KEYS))}')
        return data

    def _read_capabilities(self, spec: dict) -> tuple[CapabilityCatalog, list[dict]]:
        entries = spec.get('capabilities')
        if not isinstance(entries, list) or not entries:
            raise ConfigError(f'{self.path}: capabilities: expected a non-empty list')
        capabilities, gates = [], []
        for number, entry in enumerate(entries, 1):
            where = f'{self.path}: capabilities[{number}]'
            entry = _mapping(entry, where)
            name, action = entry.get('name'), entry.get('action')
            if isinstance(name, str):
                where = f'{where} ({name})'
            _known_keys(entry, CAPABILITY_KEYS, where)
            if not isinstance(name, str) or not isinstance(action, str):
                raise ConfigError(f'{where}: needs a "name" and the "action" it gates')
            arguments = {str(k).lstrip('?'): str(v) for k, v in
                         _mapping(entry.get('arguments', {}), f'{where}: arguments').items()}
            group = ','.join(arguments.values()) or action
            capabilities.append(Capability(name, action, group,
                                           str(entry.get('description', ''))))
            gates.append({'name': name, 'action': action, 'arguments': arguments})
        partner_types = {}
        for type_name, entry in _mapping(spec.get('partner_types', {}),
                                         f'{self.path}: partner_types').items():
            entry = _mapping(entry, f'{self.path}: partner_types: {type_name}')
            _known_keys(entry, PARTNER_TYPE_KEYS, f'{self.path}: partner_types: {type_name}')
            missing = entry.get('missing', [])
            known = {c.name for c in capabilities}
            for capability in _strings(missing, f'{self.path}: partner_types: {type_name}'):
                if capability not in known:
                    raise ConfigError(f'{self.path}: partner type {type_name!r} names an '
                                      f'unknown capability {capability!r}; capabilities: '
                                      f'{", ".join(sorted(known))}')
            partner_types[str(type_name)] = PartnerType(
                str(type_name), str(entry.get('description', '')), tuple(missing))
        try:
            return CapabilityCatalog(capabilities, partner_types), gates
        except ConfigError as error:
            raise ConfigError(f'{self.path}: {error}') from None

    def _check_objects_and_gates(self) -> None:
        domain = self._domain_problem
        for role, name in self.agent_objects.items():
            if name not in self.all_objects:
                raise ConfigError(f'{self.path}: agents: {role} object {name!r} is not '
                                  'listed under objects')
        schemas = {a.name: a for a in domain.actions}
        for gate in self._gates:
            action = schemas.get(gate['action'])
            if action is None:
                raise ConfigError(f'{self.path}: capability {gate["name"]!r} gates an unknown '
                                  f'action {gate["action"]!r}; actions: '
                                  f'{", ".join(sorted(schemas))}')
            parameters = {p.name: p for p in action.parameters}
            for argument, value in gate['arguments'].items():
                if argument not in parameters:
                    raise ConfigError(
                        f'{self.path}: capability {gate["name"]!r}: action '
                        f'{gate["action"]!r} has no argument {argument!r}; arguments: '
                        f'{", ".join(parameters)}')
                allowed = self._objects_of_type(parameters[argument].type.name)
                if value not in allowed:
                    raise ConfigError(
                        f'{self.path}: capability {gate["name"]!r}: {value!r} is not an '
                        f'object of type {parameters[argument].type.name!r} (argument '
                        f'{argument!r} of {gate["action"]!r}: {", ".join(allowed)})')

    def _check_static_and_costs(self) -> None:
        """Every static fact is of a predicate no action changes, and every cost names a
        cost function of the domain, with objects of the right types."""
        domain = self._domain_problem
        types = sorted(t.name for t in domain.user_types)
        for kind in self._objects:
            if kind not in types:
                raise ConfigError(f'{self.path}: objects: {kind!r} is no type of the PDDL '
                                  f'domain; types: {", ".join(types) or "none"}')
        fluents = {f.name: f for f in domain.fluents}
        static = {f.name for f in domain.get_static_fluents()}
        for fact in sorted(self._static_facts):
            name, *args = split_atom(fact)
            fluent = fluents.get(name)
            where = f'{self.path}: static: {fact}'
            if fluent is None or not fluent.type.is_bool_type():
                predicates = sorted(f.name for f in domain.fluents if f.type.is_bool_type())
                raise ConfigError(f'{where}: no predicate {name!r} in the PDDL domain; '
                                  f'predicates: {", ".join(predicates)}')
            if name not in static:
                changers = sorted({a.name for a in domain.actions for e in a.effects
                                   if e.fluent.is_fluent_exp()
                                   and e.fluent.fluent().name == name})
                raise ConfigError(f'{where}: {name!r} is changed by the actions '
                                  f'{", ".join(changers)}, so it is no static fact; a task '
                                  'says where it starts (the initial state of a problem or '
                                  'template)')
            self._check_arguments(fluent, args, where)
        functions = {n: f for n, f in fluents.items() if not f.type.is_bool_type()
                     and n != 'total-cost' and n not in self._constant_costs}
        for term in self._costs:
            name, *args = split_atom(term)
            where = f'{self.path}: costs: {term}'
            if name not in functions:
                known = ', '.join(sorted(functions)) or 'none (its costs are numbers)'
                raise ConfigError(f'{where}: no cost function {name!r} in the PDDL domain; '
                                  f'cost functions: {known}')
            self._check_arguments(functions[name], args, where)
            self._cost_value(name, tuple(args))   # checks the value
        if self._default_cost is not None:
            self._checked_cost('default', self._default_cost)

    def _check_arguments(self, fluent, args: Sequence[str], where: str) -> None:
        signature = fluent.signature
        if len(args) != len(signature):
            raise ConfigError(f'{where}: {fluent.name!r} takes {len(signature)} arguments, '
                              f'got {len(args)}')
        for value, parameter in zip(args, signature):
            allowed = self._objects_of_type(parameter.type.name)
            if value not in allowed:
                raise ConfigError(f'{where}: {value!r} is not an object of type '
                                  f'{parameter.type.name!r} ({", ".join(allowed)})')

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
            raise ConfigError(f'{self.path}: objects: no objects of PDDL type {type_name!r}')
        return tuple(names)

    def _static_value(self, predicate: str, args: tuple[str, ...]) -> bool:
        return atom(predicate, *args) in self._static_facts

    def _cost_value(self, fluent: str, args: tuple[str, ...]) -> float:
        term = atom(fluent, *args)
        value = self._costs.get(term, self._default_cost)
        if value is None:
            raise ConfigError(f'{self.path}: costs: no value for {term} and no default')
        return self._checked_cost(term, value)

    def _checked_cost(self, term: str, value: Any) -> float:
        if isinstance(value, bool) or not (isinstance(value, (int, float))
                                           and float(value).is_integer()
                                           and 1 <= value <= 20):
            raise ConfigError(f'{self.path}: costs: {term} must be a whole number from 1 '
                              f'to 20, got {value!r}')
        return float(value)

    def _schema_gate(self, schema: str, binding: dict[str, str]) -> int | None:
        found = [index for index, gate in enumerate(self._gates)
                 if gate['action'] == schema
                 and all(binding.get(k) == v for k, v in gate['arguments'].items())]
        if len(found) > 1:
            names = ', '.join(self._gates[i]['name'] for i in found)
            raise ConfigError(f'{self.path}: capabilities {names} all gate '
                              f'({schema} {" ".join(binding.values())}); one action may need '
                              'one capability')
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
            raise ConfigError(f'{self.path}: tasks: give either "problems" or "generate", '
                              'not both')
        if files is None:
            if 'generate' not in self._task_spec:
                raise ConfigError(f'{self.path}: tasks: give "problems" (PDDL problem files) '
                                  'or "generate" (templates)')
            generate = _mapping(self._task_spec['generate'], f'{self.path}: tasks: generate')
            _known_keys(generate, GENERATE_KEYS, f'{self.path}: tasks: generate')
            return []
        tasks = []
        for number, name in enumerate(_strings(files, f'{self.path}: tasks: problems'), 1):
            path = (self.path.parent / name).resolve()
            try:
                text = path.read_text()
            except OSError as error:
                raise ConfigError(f'{self.path}: tasks: problems[{number}]: cannot read '
                                  f'{path}: {error.strerror}') from None
            try:
                with self._reader_lock:
                    problem = PDDLReader().parse_problem_string(self._domain_text, text)
            except Exception as error:  # noqa: BLE001 - the user's PDDL
                raise ConfigError(f'{path}: cannot read the PDDL problem: '
                                  f'{type(error).__name__}: {error}') from None
            tasks.append(self._task_of_problem(problem, path))
        if not tasks:
            raise ConfigError(f'{self.path}: tasks: problems is empty')
        return tasks

    def _task_of_problem(self, problem: Problem, path: Path) -> Task:
        """The task of a problem file. Its objects, static facts and costs come from
        domain.yaml, so the file must agree with it; its :metric is not read (plans
        always minimise the total cost)."""
        known = set(self.all_objects)
        undeclared = [o.name for o in problem.all_objects if o.name not in known]
        if undeclared:
            raise ConfigError(f'{path}: objects {", ".join(undeclared)} are not listed under '
                              f'objects in {self.path} (every task has the objects listed '
                              'there)')
        dynamic = set(self.propositions)
        initial, static = set(), set()
        for fluent, value in problem.explicit_initial_values.items():
            text = atom(fluent.fluent().name, *(str(a) for a in fluent.args))
            if not fluent.type.is_bool_type():
                if fluent.fluent().name == 'total-cost' and value.is_constant() \
                        and float(value.constant_value()) == 0:
                    continue
                raise ConfigError(f'{path}: (= {text} {value}): costs are not read from '
                                  f'problem files; give them under costs in {self.path} (or '
                                  'as numbers in the PDDL domain)')
            if not value.is_true():
                continue
            if text in dynamic:
                initial.add(text)
            elif text in self._static_facts:
                static.add(text)
            else:
                raise ConfigError(f'{path}: {text} is neither a fact of the domain nor one of '
                                  f'the static facts of {self.path}')
        if static and static != self._static_facts:
            missing = sorted(self._static_facts - static)
            raise ConfigError(f'{path}: the static facts differ from those under static in '
                              f'{self.path}: it lacks {" ".join(missing)} (a problem lists '
                              'all of them or none)')
        goals: list = []
        for goal in problem.goals:
            goals.extend(goal.args if goal.is_and() else [goal])
        goal_atoms = set()
        for goal in goals:
            if not goal.is_fluent_exp():
                raise ConfigError(f'{path}: only conjunctions of facts are supported as '
                                  f'goals, got {goal}')
            goal_atoms.add(atom(goal.fluent().name, *(str(a) for a in goal.args)))
        task = Task(pddl_name(path.stem), frozenset(initial), frozenset(goal_atoms))
        try:
            self.validate_task(task)
        except ConfigError as error:
            raise ConfigError(f'{path}: {error}') from None
        return task

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
        lines += [f'  {fact}' for fact in sorted(self._static_facts)]
        lines += [f'  (= {term} {value})' for term, value in self.planner_costs.items()]
        lines.append(' )')
        lines.append(' (:goal (and ' + ' '.join(sorted(task.goal)) + '))')
        lines.append(' (:metric minimize (total-cost)))' if metric else ')')
        return '\n'.join(lines)

    def conditioned_problem(self, base: Problem, capabilities: np.ndarray) -> Problem:
        """The induced problem: a partner's action gated by a missing capability gets a
        precondition no state meets (the search path restricts operators directly)."""
        from unified_planning.shortcuts import FALSE, Equals, Not, Or

        capabilities = self.catalog.check_vector(capabilities)
        problem = base.clone()
        partner = problem.object(self.agent_objects[HUMAN])
        for index in np.flatnonzero(~capabilities):
            gate = self._gates[index]
            action = problem.action(gate['action'])
            parameters = {p.name: p for p in action.parameters}
            actor = next(p for p in action.parameters
                         if p.type.name in _type_and_ancestors(partner.type))
            escape = [Not(Equals(actor, partner))]
            escape += [Not(Equals(parameters[k], problem.object(v)))
                       for k, v in gate['arguments'].items()]
            action.add_precondition(Or(*escape) if escape else FALSE())
        return problem

    def describe(self) -> str:
        return f'{self.name} ({self.path})'


def _type_and_ancestors(kind) -> set[str]:
    names = set()
    while kind is not None:
        names.add(kind.name)
        kind = kind.father
    return names


class ProblemCycle:
    """The domain's problem files in a seeded order, reshuffled after each round."""

    def __init__(self, tasks: Sequence[Task], seed: int):
        self.tasks_pool = list(tasks)
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self._order: list[int] = []
        self._count = 0

    def next_task(self) -> Task:
        if not self._order:
            self._order = list(self.rng.permutation(len(self.tasks_pool)))
        self._count += 1
        task = self.tasks_pool[self._order.pop(0)]
        return Task(f'{task.task_id}-{self.seed}-{self._count}', task.initial, task.goal)

    def tasks(self, count: int) -> list[Task]:
        return [self.next_task() for _ in range(count)]


class TemplateGenerator:
    """Tasks drawn from initial-state and goal templates with ``numpy``'s PCG64.

    An entry of ``initial`` or ``goal`` is a fact, ``{one_of: [facts]}`` (one of them),
    or ``{some_of: [facts], count: [low, high]}`` (that many distinct ones); with
    ``for_each: {name: type}`` the entry is repeated for every object of the type,
    ``{name}`` in its facts replaced by the object. Goals that already hold are drawn
    again.
    """

    def __init__(self, domain: FileDomain, spec: dict, seed: int):
        self.domain = domain
        self.where = f'{domain.path}: tasks: generate'
        self.initial = self._entries(spec.get('initial'), 'initial')
        self.goal = self._entries(spec.get('goal'), 'goal')
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self._count = 0

    def _entries(self, value: Any, part: str) -> list:
        if not isinstance(value, list) or not value:
            raise ConfigError(f'{self.where}: {part}: expected a non-empty list')
        return value

    def _expand(self, entries: list, part: str) -> set[str]:
        facts: set[str] = set()
        for number, entry in enumerate(entries, 1):
            where = f'{self.where}: {part}[{number}]'
            if isinstance(entry, str):
                facts.add(self._fact(entry, where))
                continue
            entry = _mapping(entry, where)
            _known_keys(entry, TEMPLATE_KEYS, where)
            if 'count' in entry and 'some_of' not in entry:
                raise ConfigError(f'{where}: count goes with some_of')
            loops = _mapping(entry.get('for_each', {}), f'{where}: for_each')
            names = list(loops)
            choices = [self.domain._objects_of_type(str(loops[n])) for n in names]
            for values in itertools.product(*choices) if names else [()]:
                bound = dict(zip(names, values))
                facts |= self._choose(entry, bound, where)
        return facts

    def _choose(self, entry: dict, bound: dict, where: str) -> set[str]:
        def fill(text: str) -> str:
            try:
                return self._fact(text.format(**bound), where)
            except (KeyError, IndexError) as error:
                raise ConfigError(f'{where}: {text!r} names {error} that for_each does not '
                                  'bind') from None
        if 'one_of' in entry:
            options = _strings(entry['one_of'], f'{where}: one_of')
            return {fill(options[int(self.rng.integers(len(options)))])}
        if 'some_of' in entry:
            options = _strings(entry['some_of'], f'{where}: some_of')
            count = entry.get('count', [1, len(options)])
            if (not isinstance(count, list) or len(count) != 2
                    or not 0 <= count[0] <= count[1] <= len(options)):
                raise ConfigError(f'{where}: count must be [low, high] within 0-{len(options)}')
            size = int(self.rng.integers(count[0], count[1] + 1))
            picked = self.rng.choice(len(options), size=size, replace=False)
            return {fill(options[int(i)]) for i in sorted(picked)}
        if 'fact' in entry:
            return {fill(str(entry['fact']))}
        raise ConfigError(f'{where}: an entry is a fact, one_of, some_of or fact (with '
                          'for_each)')

    def _fact(self, text: str, where: str) -> str:
        fact = atom(*split_atom(text))
        if fact not in self.domain._prop_index:
            raise ConfigError(f'{where}: {fact} is not a fact of the domain')
        return fact

    def next_task(self) -> Task:
        self._count += 1
        for _ in range(1000):
            initial = self._expand(self.initial, 'initial')
            goal = self._expand(self.goal, 'goal')
            if goal and not goal <= initial:
                task = Task(f'task-{self.seed}-{self._count}', frozenset(initial),
                            frozenset(goal))
                self.domain.validate_task(task)
                return task
        raise ConfigError(f'{self.where}: 1000 draws gave only goals that already hold')

    def tasks(self, count: int) -> list[Task]:
        return [self.next_task() for _ in range(count)]

"""Action costs as the planner needs them, from however a PDDL domain writes them.

The planner breaks ties between equally cheap plans through the values of cost
functions, which every problem lists (see ``model.planner_cost``). Published domains
mostly write constants, ``(increase (total-cost) 2)``, leave some actions without a
cost (which PDDL counts as 0), or have no costs at all (every action counts 1). This
module rewrites such a domain so that every action's cost is one cost function over
all its parameters, ``(cecm-cost-<action> ?a ?b ...)``, whose value is the constant:
the user writes nothing more, and plans are found and ordered as with cost functions.
A domain that already gives every action a cost function is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cecm_ros.core.errors import ConfigError

from .positions import at, locate, pddl_tokens

SYNTHETIC_PREFIX = 'cecm-cost-'
# As for cost functions' values (domain.yaml's costs): plans of up to 99 actions keep
# the planner's integers within Fast Downward's 32 bits.
MAX_CONSTANT_COST = 20

def _parse(text: str, where: Path) -> list:
    stack: list[list] = [[]]
    opened: list[tuple[int, int]] = []     # where each open parenthesis is
    for token, line, column in pddl_tokens(text):
        if token == '(':
            stack.append([])
            opened.append((line, column))
        elif token == ')':
            if len(stack) == 1:
                raise ConfigError(f'{at(where, (line, column))}: cannot read the PDDL '
                                  'domain: a ")" too many')
            done = stack.pop()
            opened.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    if len(stack) != 1:
        raise ConfigError(f'{at(where, opened[0] if len(opened) == 1 else opened[-1])}: '
                          'cannot read the PDDL domain: this "(" is never closed')
    if len(stack[0]) != 1 or not isinstance(stack[0][0], list):
        raise ConfigError(f'{where}: cannot read the PDDL domain: expected one '
                          '(define (domain ...) ...) with balanced parentheses')
    return stack[0][0]


def _text(node, top: bool = False) -> str:
    """PDDL text of a parsed node; the top level with one section a line."""
    if isinstance(node, str):
        return node
    if top:
        return '(' + '\n  '.join(_text(n) for n in node) + ')'
    return '(' + ' '.join(_text(n) for n in node) + ')'


def _is_number(token) -> bool:
    if not isinstance(token, str):
        return False
    try:
        float(token)
    except ValueError:
        return False
    return True


def _keyword(node: list, key: str):
    """The value after ``key`` in an action's flat list of keywords and values."""
    for index, item in enumerate(node[:-1]):
        if isinstance(item, str) and item.lower() == key:
            return index + 1
    return None


def _parameter_names(parameters: list) -> list[str]:
    return [p for p in parameters if isinstance(p, str) and p.startswith('?')]


@dataclass
class CostRewrite:
    """The domain text for the planner and the value of each cost function made here."""

    text: str
    constants: dict[str, float] = field(default_factory=dict)

    @property
    def rewritten(self) -> bool:
        return bool(self.constants)


def rewrite_costs(text: str, where: Path) -> CostRewrite:
    """Give every action a cost function (see the module docstring).

    ``where`` is the PDDL file, named in errors: a cost written as anything but a
    number or one cost function (e.g. ``(* 2 (f ?x))``) is refused with the action.
    """
    def cost_at(action: str) -> str:
        return at(where, locate(text, ['(', ':action', action], ['increase']))

    define = _parse(text, where)
    if not define or not isinstance(define[0], str) or define[0].lower() != 'define':
        raise ConfigError(f'{where}: cannot read the PDDL domain: it does not start with '
                          '(define (domain ...)')
    sections = [n for n in define if isinstance(n, list) and n
                and isinstance(n[0], str)]
    functions = next((n for n in sections if n[0].lower() == ':functions'), None)
    declared = set()
    if functions is not None:
        declared = {f[0].lower() for f in functions[1:] if isinstance(f, list) and f}
    with_costs = 'total-cost' in declared
    constants: dict[str, float] = {}
    new_functions: list = []
    for action in (n for n in sections if n[0].lower() == ':action'):
        name = str(action[1]) if len(action) > 1 else '?'
        parameters_at = _keyword(action, ':parameters')
        parameters = action[parameters_at] if parameters_at is not None else []
        effect_at = _keyword(action, ':effect')
        effect = action[effect_at] if effect_at is not None else ['and']
        effects = effect[1:] if effect and str(effect[0]).lower() == 'and' else [effect]
        increases = [e for e in effects if isinstance(e, list) and len(e) == 3
                     and isinstance(e[0], str) and e[0].lower() == 'increase'
                     and e[1] == ['total-cost']]
        constant = None
        if not with_costs:
            constant = 1.0
        elif not increases:
            constant = 0.0
        else:
            for increase in increases:
                value = increase[2]
                if _is_number(value):
                    if len(increases) > 1:
                        raise ConfigError(f'{cost_at(name)}: action {name!r}: give its cost '
                                          'as one (increase (total-cost) ...) with a number')
                    constant = float(value)
                    if not (constant.is_integer() and 0 <= constant <= MAX_CONSTANT_COST):
                        raise ConfigError(f'{cost_at(name)}: action {name!r}: cost {value} '
                                          f'must be a whole number from 0 to '
                                          f'{MAX_CONSTANT_COST} (the planner\'s tie-breaking '
                                          'needs the room)')
                elif not (isinstance(value, list) and value
                          and isinstance(value[0], str) and value[0].lower() in declared):
                    shown = _text(value)
                    raise ConfigError(
                        f'{cost_at(name)}: action {name!r}: unsupported cost {shown}; write '
                        'a number, (increase (total-cost) 2), or one cost function, '
                        '(increase (total-cost) (move-cost ?a))')
        if constant is None:
            continue
        function = SYNTHETIC_PREFIX + name
        while function in declared:
            function += '-'
        declared.add(function)
        constants[function] = constant
        new_functions.append([function, *parameters])
        new_functions += ['-', 'number']
        cost = ['increase', ['total-cost'], [function, *_parameter_names(parameters)]]
        kept = [e for e in effects if e not in increases]
        if effect_at is None:
            action += [':effect', ['and', *kept, cost]]
        else:
            action[effect_at] = ['and', *kept, cost]
    if not constants:
        return CostRewrite(text)
    if functions is None:
        functions = [':functions']
        define.insert(_section_position(define), functions)
    if not with_costs:
        functions += [['total-cost'], '-', 'number']
        requirements = next((n for n in sections if n[0].lower() == ':requirements'), None)
        if requirements is None:
            define.insert(2, [':requirements', ':action-costs'])
        elif ':action-costs' not in requirements:
            requirements.append(':action-costs')
    functions += new_functions
    return CostRewrite(_text(define, top=True) + '\n', constants)


# Words of PDDL's own that stand where a predicate could.
PDDL_WORDS = {'and', 'or', 'not', 'imply', 'forall', 'exists', 'when', 'increase',
               'decrease', 'assign', 'scale-up', 'scale-down', '=', '<', '>', '<=', '>=',
               '+', '-', '*', '/', 'either'}


def declared_predicates(text: str) -> tuple[set[str], set[str]]:
    """The predicates and the functions a PDDL domain declares (none when the text
    cannot be read)."""
    try:
        define = _parse(text, Path('domain'))
    except ConfigError:
        return set(), set()
    found: dict[str, set[str]] = {':predicates': set(), ':functions': set()}
    for section in define:
        if isinstance(section, list) and section and isinstance(section[0], str) \
                and section[0].lower() in found:
            found[section[0].lower()] |= {d[0].lower() for d in section[1:]
                                          if isinstance(d, list) and d
                                          and isinstance(d[0], str)}
    return found[':predicates'], found[':functions']


def _section_position(define: list) -> int:
    """Where ``:functions`` goes: after the predicates (before the first action)."""
    for index, node in enumerate(define):
        if isinstance(node, list) and node and node[0] in (':action', ':durative-action',
                                                           ':derived'):
            return index
    return len(define)

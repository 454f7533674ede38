"""Fast Downward's translator and search run apart, so one translation serves many vectors.

Capability facts are static, so Fast Downward's translator compiles them into the set of
ground operators. Translating a task once with a fully capable human and then dropping
the operators whose capability a vector lacks gives the search the same operators the
translator would have kept for that vector; only its reachability pruning, which cannot
change the optimal cost, is skipped. A* then returns an optimal plan. The encodings
differ, so a search could pick another plan among equally cheap ones; the tie-breaking
costs the model writes (``cecm_ros.domains.tidyup.model``) make the optimum unique in nearly
every case, and then both find the same plan.

Because the optimum is unique, the heuristic is free to choose. LM-cut (what the
unified-planning call runs) is a weak guide through the tie-breaking part of the costs:
A* then expands most of the last cost layer. CEGAR abstractions for the single goals
keep the exact small costs and need about a fifth of the search time on TidyUP's
four-item goals; ``verbosity=silent`` stops the search printing a line for each of the
thousands of distinct f-values that the fine-grained costs produce. A domain may name
another search (``PddlModel.optimal_search``): a TidyUP household may ask for
canonical pattern databases, which see more of the agents' moves and take about a
third of that time; a different heuristic can find another plan only where two plans
tie on every cost, which is why a household asks for it rather than getting it.

That turns a ~0.25 s unified-planning call per vector into one ~0.1 s translation per
task plus the search itself per vector (0.01-0.3 s on TidyUP's four-item tasks). The
search binary and the translator are the ones the ``up-fast-downward`` package ships.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from cecm_ros.core.errors import PlannerTimeoutError, PlanningError

OPTIMAL_SEARCH = 'astar(cegar(subtasks=[goals()]),verbosity=silent)'
# A planner process killed by a signal is run again this often before the error counts.
CRASH_RETRIES = 2

# Fast Downward exit codes (driver/returncodes.py).
SUCCESS = 0
TRANSLATE_UNSOLVABLE = 10
SEARCH_UNSOLVABLE = 11


def fast_downward_root() -> Path | None:
    """The Fast Downward tree inside the installed up-fast-downward package, if any."""
    # Found, not imported: importing it imports unified-planning's engines (a second of
    # CPU in a process that only runs the binaries).
    spec = importlib.util.find_spec('up_fast_downward')
    if spec is None or spec.origin is None:
        return None
    root = Path(spec.origin).resolve().parent / 'downward'
    if (root / 'fast-downward.py').is_file() and (root / 'builds/release/bin/downward').is_file():
        return root
    return None


@dataclass(frozen=True)
class TranslatedTask:
    """A task in Fast Downward's SAS format, split around its operator section."""

    head: str                      # everything up to the operator count
    operator_names: tuple[str, ...]
    operator_blocks: tuple[str, ...]
    tail: str                      # the axiom section
    unsolvable: bool = False       # the translator proved the goal unreachable

    @cached_property
    def _variables(self) -> tuple[list[tuple[int, list[tuple[str, str]]]], frozenset[str]]:
        """Per SAS variable, its axiom layer and its values as (kind, PDDL fact), kind
        'atom', 'negated' or 'none' (<none of those>); and every fact they describe.
        Parsed once per translation: a rebased start reads them per re-plan."""
        found: list[tuple[int, list[tuple[str, str]]]] = []
        lines = self.head.splitlines()
        index = 0
        while index < len(lines):
            if lines[index] == 'begin_variable':
                layer, count = int(lines[index + 2]), int(lines[index + 3])
                values = []
                for name in lines[index + 4:index + 4 + count]:
                    if name.startswith('Atom '):
                        values.append(('atom', _pddl_atom(name[5:])))
                    elif name.startswith('NegatedAtom '):
                        values.append(('negated', _pddl_atom(name[12:])))
                    else:
                        values.append(('none', ''))
                found.append((layer, values))
                index += 4 + count
            else:
                index += 1
        described = frozenset(fact for _, values in found for kind, fact in values
                              if kind != 'none')
        return found, described

    @cached_property
    def _mutex_groups(self) -> list[list[tuple[int, int]]]:
        groups: list[list[tuple[int, int]]] = []
        lines = self.head.splitlines()
        for index, line in enumerate(lines):
            if line == 'begin_mutex_group':
                count = int(lines[index + 1])
                groups.append([(int(a), int(b)) for a, b in
                               (lines[index + 2 + k].split() for k in range(count))])
        return groups

    def mutex_groups(self) -> list[list[tuple[int, int]]]:
        """The translator's mutex groups: (variable, value) facts of which at most one
        holds in any state reachable from the start it was made from."""
        return self._mutex_groups

    def rebased(self, atoms: frozenset[str], origin: frozenset[str]) -> TranslatedTask | None:
        """This task from another start: the state of ``atoms`` (PDDL texts such as
        ``(at robot kitchen)``), where this translation was made from ``origin``.

        Sound when every fact the translation left out (static, unreachable or
        irrelevant to the goal) has the same value in both starts, the variables take
        exactly one value each in the new one and it breaks none of the translator's
        mutex groups: then every fact reachable from the new start was reachable from
        the old, so the operators are the ones a new translation would keep (or more,
        which leaves the optimum alone). Else None: translate afresh.
        """
        if self.unsolvable:
            return None
        variables, described = self._variables
        if atoms - described != origin - described:
            return None
        start = self.head.index('begin_state\n') + len('begin_state\n')
        end = self.head.index('end_state\n', start)
        values: list[int] = []
        for (layer, options), old in zip(variables, self.head[start:end].split(),
                                         strict=True):
            if layer >= 0:                 # a derived variable starts at its default
                values.append(int(old))
                continue
            holds = [value for value, (kind, fact) in enumerate(options)
                     if (kind == 'atom' and fact in atoms)
                     or (kind == 'negated' and fact not in atoms)]
            if not holds:
                holds = [value for value, (kind, _) in enumerate(options) if kind == 'none']
            if len(holds) != 1:
                return None
            values.append(holds[0])
        # The translator pruned operators that break a mutex group, found from the old
        # start: a new start that breaks one is no start this translation is for.
        for group in self._mutex_groups:
            if sum(values[variable] == value for variable, value in group) > 1:
                return None
        state = ''.join(f'{value}\n' for value in values)
        return replace(self, head=self.head[:start] + state + self.head[end:])

    @classmethod
    def parse(cls, text: str) -> TranslatedTask:
        lines = text.splitlines(keepends=True)
        try:
            count_at = next(i for i, line in enumerate(lines)
                            if line.strip() == 'end_goal') + 1
            count = int(lines[count_at])
        except (StopIteration, IndexError, ValueError) as error:
            raise PlanningError('Fast Downward wrote a SAS file without a goal and '
                                'operator section') from error
        names: list[str] = []
        blocks: list[str] = []
        index = count_at + 1
        for _ in range(count):
            end = index
            while end < len(lines) and lines[end].strip() != 'end_operator':
                end += 1
            if end >= len(lines) or lines[index].strip() != 'begin_operator':
                raise PlanningError(f'Fast Downward wrote a SAS file whose operator '
                                    f'{len(names) + 1} of {count} is incomplete')
            names.append(lines[index + 1].strip())
            blocks.append(''.join(lines[index:end + 1]))
            index = end + 1
        return cls(''.join(lines[:count_at]), tuple(names), tuple(blocks),
                   ''.join(lines[index:]))

    def restricted(self, keep) -> str:
        """The SAS text with only the operators where ``keep`` is true."""
        kept = [block for block, wanted in zip(self.operator_blocks, keep, strict=True)
                if wanted]
        return f'{self.head}{len(kept)}\n{"".join(kept)}{self.tail}'


class FastDownwardSearch:
    """The translator and the optimal search as plain subprocesses; thread-safe.

    Every run gets a private scratch directory, because Fast Downward writes its
    files into the working directory. The subprocesses release the GIL, so threads
    of one Python process keep several cores busy.
    """

    def __init__(self, root: Path, timeout_s: float, search: str = OPTIMAL_SEARCH):
        self.root = root
        self.timeout_s = timeout_s
        self.search_options = search

    def translate(self, domain_text: str, problem_text: str,
                  label: str = 'task') -> TranslatedTask:
        with tempfile.TemporaryDirectory(prefix='cecm-translate-') as scratch:
            folder = Path(scratch)
            (folder / 'domain.pddl').write_text(domain_text)
            (folder / 'problem.pddl').write_text(problem_text)
            result = self._run([sys.executable, str(self.root / 'fast-downward.py'),
                                '--translate', 'domain.pddl', 'problem.pddl'],
                               'translator', folder, label)
            if result.returncode == TRANSLATE_UNSOLVABLE:
                return TranslatedTask('', (), (), '', unsolvable=True)
            sas = folder / 'output.sas'
            if result.returncode != SUCCESS or not sas.is_file():
                raise PlanningError(f'{label}: the Fast Downward translator failed (exit code '
                                    f'{result.returncode}): {_tail(result)}')
            return TranslatedTask.parse(sas.read_text())

    def search(self, sas_text: str, label: str = 'task') -> list[str] | None:
        """The plan's action texts, or None when the search proves there is none."""
        with tempfile.TemporaryDirectory(prefix='cecm-search-') as scratch:
            folder = Path(scratch)
            result = self._run([str(self.root / 'builds/release/bin/downward'), '--search',
                                self.search_options, '--internal-plan-file', 'sas_plan'],
                               'search', folder, label, sas_text)
            plan_file = folder / 'sas_plan'
            if result.returncode == SEARCH_UNSOLVABLE:
                return None
            if result.returncode != SUCCESS or not plan_file.is_file():
                raise PlanningError(f'{label}: the Fast Downward search failed (exit code '
                                    f'{result.returncode}): {_tail(result)}')
            return [line.strip() for line in plan_file.read_text().splitlines()
                    if line.strip() and not line.startswith(';')]

    def _run(self, command: list[str], what: str, folder: Path, label: str,
             stdin: str | None = None):
        """Run one planner process; one killed by a signal (a crash, the OOM killer) is
        run again, up to CRASH_RETRIES times: its answer does not depend on the attempt."""
        for attempt in range(CRASH_RETRIES + 1):
            try:
                result = subprocess.run(command, input=stdin, capture_output=True, text=True,
                                        timeout=self.timeout_s, cwd=folder)
            except subprocess.TimeoutExpired as error:
                raise PlannerTimeoutError(f'{label}: the Fast Downward {what} found no answer '
                                          f'within {self.timeout_s:g} s') from error
            if result.returncode >= 0:
                return result
            print(f'cecm planner: the Fast Downward {what} of {label} was killed by signal '
                  f'{-result.returncode}' + ('; running it again' if attempt < CRASH_RETRIES
                                             else ''), file=sys.stderr, flush=True)
        raise PlanningError(f'{label}: the Fast Downward {what} was killed by signal '
                            f'{-result.returncode} in each of {CRASH_RETRIES + 1} runs')


def _pddl_atom(sas_text: str) -> str:
    """``at(robot, kitchen)`` as PDDL writes it: ``(at robot kitchen)``."""
    name, _, arguments = sas_text.partition('(')
    parts = [name.strip()] + [a.strip() for a in arguments.rstrip(')').split(',') if a.strip()]
    return f'({" ".join(parts)})'


def _tail(result: subprocess.CompletedProcess) -> str:
    text = (result.stderr or '') + (result.stdout or '')
    return text.strip()[-600:] or 'no output'

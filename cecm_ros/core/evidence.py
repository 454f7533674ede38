"""The evidence report of an experiment: what each run decided about every capability.

Hamming distance counts capabilities no task could show as errors; what a user wants
to know is which capabilities the evidence settled (and whether rightly), which it left
undecided and with what they are confounded. ``runs.csv`` keeps this as one letter per
capability (``TaskResult.status``) and the confounders (``TaskResult.confounded``);
``summary.json`` gets it per run and task (:func:`evidence_entries`), and ``cecm
experiment`` prints it for the last task (:func:`describe_evidence`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

# One letter per capability in runs.csv's status column.
STATUS_LETTERS = {'known_present': 'P', 'known_absent': 'A', 'undecided': 'U',
                  'never_exercised': 'N', 'inert': 'I'}
STATUS_OF_LETTER = {letter: status for status, letter in STATUS_LETTERS.items()}


def confounded_text(names: Sequence[str], confounders: Sequence[Sequence[str]]) -> str:
    """runs.csv's ``confounded``: ``name:other+other`` per confounded capability."""
    return ' '.join(f'{name}:{"+".join(others)}'
                    for name, others in zip(names, confounders) if others)


def parse_confounded(text: str) -> dict[str, list[str]]:
    pairs = (item.split(':', 1) for item in text.split() if ':' in item)
    return {name: others.split('+') for name, others in pairs}


def evidence_entries(names: Sequence[str], results: Sequence[Any]) -> list[dict]:
    """Per run and task, the capabilities by status; an undecided one with what it is
    confounded with; ``wrong`` those decided against the truth. Rows without statuses
    (baselines that report none) are left out."""
    entries = []
    for result in results:
        if len(result.status) != len(names):
            continue
        confounded = parse_confounded(getattr(result, 'confounded', ''))
        groups: dict[str, Any] = {status: [] for status in STATUS_LETTERS}
        groups['undecided'] = {}
        wrong = []
        for index, (name, letter) in enumerate(zip(names, result.status)):
            status = STATUS_OF_LETTER.get(letter, letter)
            if status == 'undecided':
                groups['undecided'][name] = confounded.get(name, [])
            else:
                groups.setdefault(status, []).append(name)
            if status in ('known_present', 'known_absent') and \
                    (status == 'known_present') != (result.truth[index] == '1'):
                wrong.append(name)
        entries.append({'run': result.run + 1, 'task': result.task_index + 1,
                        'task_id': result.task_id, **groups, 'wrong': wrong})
    return entries


def describe_evidence(summary: dict) -> list[str]:
    """The evidence of the last task of every run, in words: what was decided (and
    whether rightly), what stays undecided and with what, next to the metrics."""
    names = summary.get('capabilities', [])
    entries = summary.get('evidence') or []
    if not entries:
        return ['evidence: this method reports no statuses']
    last = max(entry['task'] for entry in entries)
    final = [entry for entry in entries if entry['task'] == last]
    runs = len(final)
    truth = str(summary.get('true_capabilities', '?'))
    lacking = 'nothing' if truth == 'all' else truth.replace('=0', '').replace(',', ', ')
    lines = [f'evidence after task {last} ({runs} run{"s" if runs > 1 else ""}; the partner '
             f'lacks {lacking}):']
    labels = {'known_present': 'known present', 'known_absent': 'known absent',
              'undecided': 'undecided', 'never_exercised': 'never exercised (no task '
              'showed it)', 'inert': 'inert (no action needs it)'}
    for status, label in labels.items():
        counts: Counter = Counter()
        partners: dict[str, Counter] = {}
        for entry in final:
            for name in entry[status]:
                counts[name] += 1
                if status == 'undecided':
                    partners.setdefault(name, Counter()).update(entry[status][name])
        if not counts:
            continue
        items = []
        for name in names:
            if name not in counts:
                continue
            text = name + (f' ({counts[name]}/{runs} runs)' if runs > 1 and
                           counts[name] < runs else '')
            others = [o for o, _ in partners.get(name, Counter()).most_common(3)]
            if others:
                text += f' with {", ".join(others)}'
            items.append(text)
        lines.append(f'  {label}: {"; ".join(items)}')
    wrong = Counter(name for entry in final for name in entry['wrong'])
    lines.append('  decided wrongly: ' + (', '.join(f'{n} ({c}/{runs} runs)'
                                                    for n, c in wrong.items()) or 'none'))
    per_task = summary.get('per_task', [])
    if per_task:
        first, end = per_task[0], per_task[-1]

        def change(key: str) -> str:
            if key not in first or key not in end:
                return ''
            return f'{first[key]["mean"]:.2f} -> {end[key]["mean"]:.2f}'
        parts = [(label, change(key)) for key, label in (
            ('decided', 'decided'), ('heldout_agreement', 'held-out agreement'),
            ('hamming_identifiable', 'identifiable Hamming'), ('hamming', 'Hamming'))]
        lines.append('  after task 1 -> task ' + str(end['task']) + ': ' + ', '.join(
            f'{label} {value}' for label, value in parts if value))
    return lines

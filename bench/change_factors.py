#!/usr/bin/env python3
"""The change test's Bayes factor at every update of a `cecm experiment`.

Runs `cecm experiment` with the given arguments (use `--jobs 1`, so that every run is in
this process) and prints, per update, the log Bayes factor of "a partner drawn afresh
since this task" against "the same partner" and whether it passed the threshold
(log 19 at the hazard 0.05), e.g.:

    python bench/change_factors.py --partner high_capability --switch-partner \\
        low_capability --switch-after 5 --tasks 10 --runs 1 --seed 100 \\
        --task-choice informative --heldout 40 --jobs 1 --out /tmp/switch
"""

from __future__ import annotations

import sys

import numpy as np

from cecm_ros.cli.main import main
from cecm_ros.core import weighted_posterior

_tested = weighted_posterior.WeightedPosterior._partner_changed
THRESHOLD = float(np.log((1.0 - weighted_posterior.CHANGE_HAZARD)
                         / weighted_posterior.CHANGE_HAZARD))


def _traced(self, model, item, increment, earlier, rng, update):
    changed = _tested(self, model, item, increment, earlier, rng, update)
    print(f'[change test] {item.task.task_id}: log factor {self.change_factors[-1]:+.3f} '
          f'(threshold {THRESHOLD:.3f}){"  -> changed" if changed else ""}',
          file=sys.stderr, flush=True)
    return changed


if __name__ == '__main__':
    weighted_posterior.WeightedPosterior._partner_changed = _traced
    sys.exit(main(['experiment', *sys.argv[1:]]))

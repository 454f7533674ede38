"""The session journal a restarted task manager resumes from."""

from dataclasses import asdict

from cecm_ros.experiments.experiment import TaskResult
from cecm_ros.session.records import SessionJournal

ROW = TaskResult(run=0, task_index=0, task_id='a', hamming=0.4, hamming_active=0.3,
                 correction_ratio=0.2, iou=0.5, infeasible_assigned=1, accepted_samples=9,
                 corrections=2, robot_decisions=10, goal_reached=True, estimate='1' * 20,
                 truth='0' * 20, theta=' '.join(['0.8'] * 20), update_message='',
                 heldout_agreement=1.0, hamming_identifiable=0.0, heldout_feasible=1.0)


def test_a_journal_read_back_says_which_positions_finished_failed_or_were_cut_short(tmp_path):
    path = tmp_path / 'session.jsonl'
    journal = SessionJournal(path)
    journal.append('started', index=0, task_id='a')
    journal.append('done', index=0, result=asdict(ROW))
    journal.append('started', index=1, task_id='b')
    journal.append('failed', index=1, task_id='b', interruptions=2, reason='no human action')
    journal.append('started', index=2, task_id='c')
    with open(path, 'a') as stream:
        stream.write('{"event": "done", "ind')   # torn by a crash
    again = SessionJournal(path)
    assert again.result(0) == ROW and again.failure(0) is None
    assert again.result(1) is None
    assert again.failure(1)['reason'] == 'no human action'
    assert again.failure(1)['interruptions'] == 2
    assert not again.started_unfinished(1)   # failed: not run again as interrupted
    assert again.started_unfinished(2) and again.chosen(2) == 'c'
    assert not again.finished

"""Where a participant is in a study, kept on disk after every change so that a crash,
a closed tab or a stopped machine resumes where it was and loses nothing.

One JSON file per participant (``<study dir>/<participant>/progress.json``), written
atomically: consent (when), every set begun and finished (its session id, recordings,
questionnaire answers). A set in progress resumes in the same session: the task
manager's journal (in the set's folder) runs the episode it was in again and keeps the
ones done; every start of a set records to a new file, so nothing recorded is
overwritten.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cecm_ros.core.errors import ConfigError
from cecm_ros.core.storage import write_atomically

FORMAT = 'cecm_ros/study_progress/1'


@dataclass
class SetProgress:
    label: str
    session_id: str
    recordings: list[str] = field(default_factory=list)
    started: float = 0.0
    played: float | None = None     # every task done (the questionnaire may be pending)
    finished: float | None = None
    answers: dict[str, int] = field(default_factory=dict)   # questionnaire item -> point


@dataclass
class Progress:
    """A participant's progress; ``save()`` after every change."""

    path: Path
    study: str
    participant: str
    protocol_digest: str
    consented: float | None = None
    sets: list[SetProgress] = field(default_factory=list)

    @classmethod
    def open(cls, folder: Path, study: str, participant: str, digest: str) -> Progress:
        """The participant's progress in ``folder`` (new when there is none). Progress of
        another protocol version is refused: its data would mix two designs."""
        path = Path(folder) / 'progress.json'
        if not path.is_file():
            return cls(path, study, participant, digest)
        try:
            data = json.loads(path.read_text())
            if data.get('format') != FORMAT:
                raise ValueError(f'format {data.get("format")!r}, not {FORMAT}')
            sets = [SetProgress(**entry) for entry in data['sets']]
            progress = cls(path, data['study'], data['participant'],
                           data['protocol_digest'], data.get('consented'), sets)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConfigError(f'{path}: unreadable study progress ({error}); it is kept '
                              "as it is: move the participant's folder aside to start "
                              'afresh')\
                from None
        if (progress.study, progress.participant) != (study, participant):
            raise ConfigError(f'{path}: the progress of {progress.participant!r} in study '
                              f'{progress.study!r}, not {participant!r} in {study!r}')
        if progress.protocol_digest != digest:
            raise ConfigError(f'{path}: recorded under another version of the protocol '
                              f'({progress.protocol_digest}, now {digest}); finish it with '
                              'that version, or start the participant in a new folder')
        return progress

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document: dict[str, Any] = {
            'format': FORMAT, 'study': self.study, 'participant': self.participant,
            'protocol_digest': self.protocol_digest, 'consented': self.consented,
            'sets': [vars(entry) for entry in self.sets]}
        write_atomically(self.path, json.dumps(document, indent=1) + '\n')

    def give_consent(self) -> None:
        if self.consented is None:
            self.consented = time.time()
            self.save()

    def entry(self, label: str) -> SetProgress | None:
        return next((entry for entry in self.sets if entry.label == label), None)

    def begin(self, label: str, session_id: str, recording: str) -> SetProgress:
        """A set started (or started again after an interruption: same session, one more
        recording)."""
        entry = self.entry(label)
        if entry is None:
            entry = SetProgress(label, session_id, started=time.time())
            self.sets.append(entry)
        if entry.finished is not None:
            raise ConfigError(f'{self.participant}: {label} is finished already')
        entry.recordings.append(recording)
        self.save()
        return entry

    def played(self, label: str) -> None:
        """Every task of the set is done: a run stopped from here on resumes at the
        questionnaire, not in a new session of the same tasks."""
        entry = self.entry(label)
        if entry is None:
            raise ConfigError(f'{self.participant}: {label} was never begun')
        entry.played = time.time()
        self.save()

    def finish(self, label: str, answers: dict[str, int] | None = None) -> None:
        entry = self.entry(label)
        if entry is None:
            raise ConfigError(f'{self.participant}: {label} was never begun')
        entry.finished = time.time()
        entry.answers = dict(answers or {})
        self.save()

    def done(self, label: str) -> bool:
        entry = self.entry(label)
        return entry is not None and entry.finished is not None

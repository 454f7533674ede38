"""The capability estimator's read-only questions to its partner store, as service
answers: which partners it holds (``list_partners``) and which tasks of a session a
partner's belief has taken (``session_progress``). They read the store and nothing else,
so they live beside the node that owns it."""

from __future__ import annotations

from cecm_ros.core.errors import CecmError
from cecm_ros.core.partner_store import PartnerStore


def list_partners(store: PartnerStore, store_path: str, response, log):
    """``ListPartners``: every profile in the store, or why the store cannot say."""
    try:
        profiles = store.partners()
    except CecmError as error:
        response.success = False
        response.message = (f'cannot list the partners: {error}; reset_partner or '
                            'delete_partner repairs that profile')
        log.warning(f'list_partners: {error}')
        return response
    response.store_path = store_path
    response.partner_ids = [p.partner_id for p in profiles]
    response.methods = [p.method for p in profiles]
    response.inference = [p.inference for p in profiles]
    response.tasks_seen = [p.tasks_seen for p in profiles]
    response.log_entries = [p.log_entries for p in profiles]
    response.success = True
    response.message = f'{len(profiles)} partner profiles'
    return response


def session_progress(store: PartnerStore, partner_id: str, tasks_seen: int, request,
                     response):
    """``SessionProgress``: the tasks of ``request.session_id`` the belief has taken, in
    order (a session that resumes asks where it stands)."""
    if not request.session_id:
        response.success, response.message = False, 'session_progress needs a session_id'
        return response
    entries = sorted(store.log(partner_id, request.session_id), key=lambda e: e.task_index)
    indices = [e.task_index for e in entries]
    if len(set(indices)) != len(indices):
        response.success = False
        response.message = (f'session {request.session_id!r} has a position twice in its '
                            f'task log (indices {indices})')
        return response
    response.task_ids = [e.task.task_id for e in entries]
    response.task_indices = indices
    response.tasks_seen = tasks_seen
    response.success = True
    response.message = (f'{len(entries)} tasks of session {request.session_id!r} applied '
                        f'to {partner_id!r}')
    return response

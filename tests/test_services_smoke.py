from planboard import selectors, services
from planboard.snapshots import apply_event


def test_create_and_edit_roundtrip(plan, actor, events, django_capture_on_commit_callbacks):
    before = selectors.plan_snapshot(plan_id=plan.pk)
    with django_capture_on_commit_callbacks(execute=True):
        st = services.subtask_add(plan_id=plan.pk, actor=actor, name="Pack", index=0)
        services.subtask_move(plan_id=plan.pk, actor=actor, subtask_id=st.pk, index=3)
        services.subtask_set_state(
            plan_id=plan.pk, actor=actor, subtask_id=st.pk, state="in_progress"
        )
    snap = before
    for event in events.plan_events(plan.pk):
        snap = apply_event(snap, event)
    assert snap == selectors.plan_snapshot(plan_id=plan.pk)
    assert snap["state"] == "in_progress"

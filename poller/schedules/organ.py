"""The schedules' kinds of wake: an alarm, a missed check-in, the contact stage.

They keep schedules of their own (:mod:`poller.schedules.scheduled` finds
them due), never the listeners' loop; asked for at a time, they are kept
whatever the Mood's listening, pass through an absence, and are never
cooled down.  Declared with :func:`poller.kinds.register` (see
:mod:`poller.cycle.organs`).  Their reply blocks, ``alarm``, ``checkin`` and
``contact`` (:mod:`poller.schedules.replies`), are declared to
:mod:`poller.turns.blocks`; its tools for a model agent's turn, ``set_alarm`` and
``checkin``, to :mod:`poller.tools` (by importing :mod:`poller.schedules.tools`).
"""

from __future__ import annotations

from poller import kinds
from poller.kinds import KindSpec, Tools, WakeKind
from poller.cycle import stages
from poller.schedules import agreements, mail, replies, scheduled, tools  # noqa: F401
from poller.turns import blocks

for order, name in ((90, WakeKind.ALARM), (91, WakeKind.CHECKIN_MISSED),
                    (92, WakeKind.CHECKIN_CONTACT)):
    kinds.register(KindSpec(name, order, paced=False, timed=True, while_away="pass",
                            listened=False))

blocks.register(blocks.Kind("alarm", replies.alarm_block, replies.noting(agreements.alarm),
                            rank=10, tools=Tools.FULL))
blocks.register(blocks.Kind("checkin", replies.checkin_block,
                            replies.noting(agreements.checkin), rank=20))
blocks.register(blocks.Kind("contact", replies.contact_block,
                            replies.noting(agreements.contact), rank=30,
                            without_block=frozenset({WakeKind.CHECKIN_CONTACT})))
# After a checkin block has counted (a check-in closes the streak the notice
# would otherwise plan a grace for), before the core's blocks.
blocks.register_hook(blocks.ReplyHook("notice-confirmed", replies.confirm_notice, rank=35))


# The schedules in every cycle: what a clock says is weighed after away and back
# (an agent back may be woken), before the listeners; the mail goes out after them.


def weigh_scheduled(ctx, step, now, report) -> None:
    scheduled.run(ctx, step, now, report, step.start, step.transient)


def send_mail(ctx, step, now, report) -> None:
    mail.send_waiting(ctx.store, ctx.config.mail, step.holder, now)


stages.add(stages.Stage("schedules", order=20, before=weigh_scheduled))
stages.add(stages.Stage("mail", order=90, after=send_mail, live_only=True))

"""Recording what a Python commons chat showed, as R commons records it.

    from trajectory_review.record import record

    agent = commons.Commons(client, data_source, semantic_layer, context_layer)
    record(agent)                      # before commons.ui.server("chat", agent)

Every answer the agent streams is then wrapped in a `commons_conversation_turn` span,
current while it streams (so chatlas' `invoke_agent` and `chat` spans nest under it),
with a `commons_provenance` child whose tag and citation decisions are set when it starts.
The decisions and the tag are the ones commons' own scanner and tag rule made for the
stream the user saw (`record/commons.py` says how they are taken). Where the spans go:
`record/export.py`.

An optional extra (`pip install "trajectory-review[record]"`): the reviewer never
imports this package, and this package imports nothing of the reviewer (the layering
test holds both).
"""

from trajectory_review.record.commons import RecorderError, record
from trajectory_review.record.export import flush

__all__ = ["RecorderError", "flush", "record"]

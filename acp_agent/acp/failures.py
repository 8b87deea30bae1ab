"""The session layer's refusals (``session/errors.py``) as ACP wire errors, in one place.

| refusal | code | ``data`` |
|---|---|---|
| ``UnknownSession`` | -32002 resource not found | ``sessionId`` |
| ``BadSessionId`` | -32602 | ``path``: ``$.sessionId`` (one to open) or ``$._meta.acp_agent.sessionId`` (asked for) |
| ``SessionIdInUse`` | -32602 | ``sessionId`` |
| ``ForkRefused`` | -32602 | ``sessionId``, ``seq`` |
| ``RewindRefused`` | -32602 | ``path``: ``$.toTurn``, ``sessionId``, ``toTurn`` |
| ``SessionBusy`` | -32602 | ``reason``: ``session_busy``, ``sessionId`` |
| ``SessionUnavailable`` | -32603 | ``reason`` (``journal_locked`` / ``journal_unreadable`` / ``too_many_open_files`` / ``store_unreachable`` / ``taken_over``), ``sessionId``; locked: ``holderPid`` (``null`` if unreadable) |
| ``UnknownModel`` | -32602 | ``path``: ``$.value`` |
| ``ModelKeyMissing`` | -32000 auth required | ``authMethodId``, ``env`` |

The message is the refusal's own. The router applies ``wire_error`` to every handler
(``server.py`` ``_typed``), so no handler catches a session error itself.
"""

from __future__ import annotations

from acp_agent.errors import (
    AuthRequired,
    InternalError,
    InvalidParams,
    ResourceNotFound,
    RpcError,
)
from acp_agent.session.errors import (
    BadSessionId,
    ForkRefused,
    IdRole,
    ModelKeyMissing,
    RewindRefused,
    SessionBusy,
    SessionError,
    SessionIdInUse,
    SessionUnavailable,
    UnknownModel,
    UnknownSession,
)

ID_PATHS = {IdRole.EXISTING: "$.sessionId", IdRole.REQUESTED: "$._meta.acp_agent.sessionId"}


def wire_error(exc: SessionError) -> RpcError:
    message = str(exc)
    match exc:
        case UnknownSession(session_id=sid):
            return ResourceNotFound(message, {"sessionId": sid})
        case BadSessionId(role=role):
            return InvalidParams(message, {"path": ID_PATHS[role]})
        case SessionIdInUse(session_id=sid):
            return InvalidParams(message, {"sessionId": sid})
        case SessionBusy(session_id=sid):
            return InvalidParams(message, {"reason": "session_busy", "sessionId": sid})
        case ForkRefused(session_id=sid, seq=seq):
            return InvalidParams(message, {"sessionId": sid, "seq": seq})
        case RewindRefused(session_id=sid, to_turn=to_turn):
            return InvalidParams(message, {"path": "$.toTurn", "sessionId": sid, "toTurn": to_turn})
        case SessionUnavailable(session_id=sid):
            data: dict[str, object] = {"reason": exc.reason, "sessionId": sid}
            if exc.reason == "journal_locked":
                data["holderPid"] = exc.holder_pid
            return InternalError(message, data)
        case UnknownModel():
            return InvalidParams(message, {"path": "$.value"})
        case ModelKeyMissing(needed=needed):
            return AuthRequired(message, {"authMethodId": needed.method_id, "env": needed.env})
    raise AssertionError(f"no wire error for {type(exc).__name__}")

"""The one error tree of rackcron's core.

Every outcome a caller can act on is one class, carrying the status code of
docs/spec/SEMANTICS.md "Error codes" (the gRPC code names, which the CLI and the shim each
translate once)::

    RackcronError                 code
    ├── InvalidArgument           INVALID_ARGUMENT   bad spec, timezone, filter, target, mask, page
    ├── NotFound                  NOT_FOUND          missing schedule, scope, rack, component, task
    ├── FailedPrecondition        FAILED_PRECONDITION  refused by the object's state
    │   └── IllegalTransition     FAILED_PRECONDITION  an event the task lifecycle refuses
    │                                                in the task's status (rackcron.lifecycle)
    ├── AlreadyExists             ALREADY_EXISTS     duplicate schedule name on create
    ├── Conflict                  UNKNOWN            a uniqueness violation the reference reports
    │                                                as UNKNOWN (a rename onto a taken name; an
    │                                                inventory external_id already in use)
    └── StoreError                INTERNAL           the database failed; wraps the driver error

Messages name the field they are about (``schedule.spec: ...``). Database and
driver exceptions never leave the core unwrapped: ``StoreError`` is raised
``from`` them.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "Conflict",
    "FailedPrecondition",
    "IllegalTransition",
    "InvalidArgument",
    "NotFound",
    "RackcronError",
    "StoreError",
]


class RackcronError(Exception):
    """Base of every error the core raises on purpose."""

    code = "UNKNOWN"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(RackcronError):
    """A request argument is malformed or out of range."""

    code = "INVALID_ARGUMENT"


class NotFound(RackcronError):
    """A schedule, scope, rack, component, NVL domain or task does not exist."""

    code = "NOT_FOUND"


class FailedPrecondition(RackcronError):
    """The object's current state refuses the operation."""

    code = "FAILED_PRECONDITION"


class IllegalTransition(FailedPrecondition):
    """An event the task lifecycle does not allow in the task's status (``rackcron.lifecycle``)."""


class AlreadyExists(RackcronError):
    """A schedule with this name already exists (create)."""

    code = "ALREADY_EXISTS"


class Conflict(RackcronError):
    """A uniqueness violation the reference service reports as UNKNOWN."""

    code = "UNKNOWN"


class StoreError(RackcronError):
    """The database failed in a way the caller cannot fix by changing the request."""

    code = "INTERNAL"

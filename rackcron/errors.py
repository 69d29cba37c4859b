"""The one error tree of rackcron: every exception class the code raises to users.

Every outcome a caller can act on is one class under :class:`RackcronError`,
carrying the status code of docs/spec/SEMANTICS.md "Error codes" (the gRPC code
names, which the CLI and the shim each translate once: the CLI prints
``error: message`` and exits 1, the shim returns the status). Each class is drawn
with its code in brackets and the module that defines it, and below it when it is
raised::

    RackcronError  [UNKNOWN]  rackcron.errors
    │     raised bare when nothing better fits: a TLS file --server cannot read,
    │     a server's extras_json that is not a JSON object, an address
    │     `rackcron rack-controller` cannot listen on
    ├── InvalidArgument  [INVALID_ARGUMENT]  rackcron.errors
    │   │   a bad spec, timezone, filter, target, mask, page or step argument;
    │   │   a file given to apply that is not a saved plan
    │   ├── AmbiguousName  [INVALID_ARGUMENT]  rackcron.domain.names
    │   │       a name on the command line that several racks (or components)
    │   │       have: the CLI lists them with their ids; nothing is done
    │   └── InvalidTree  [INVALID_ARGUMENT]  rackcron.reconciler.validate
    │           the tree to plan, apply or diff has errors: the CLI prints its
    │           diagnostics and the summary, and exits 1
    ├── NotFound  [NOT_FOUND]  rackcron.errors
    │       a missing schedule, scope, rack, component, NVL domain or task
    ├── FailedPrecondition  [FAILED_PRECONDITION]  rackcron.errors
    │   │   refused by the object's state; a plan with errors given to apply
    │   ├── IllegalTransition  [FAILED_PRECONDITION]  rackcron.errors
    │   │       an event the task lifecycle refuses in the task's status
    │   │       (rackcron.domain.lifecycle; a runner bug, never a user's doing)
    │   ├── ApplyLocked  [FAILED_PRECONDITION]  rackcron.service._applies
    │   │       another apply holds the store's apply lock (the message names
    │   │       the holder; `rackcron apply --break-lock`)
    │   ├── StalePlan  [FAILED_PRECONDITION]  rackcron.reconciler.apply
    │   │       what the plan changes or depends on in the store (or the
    │   │       --server) changed since the plan was made
    │   ├── Frozen  [FAILED_PRECONDITION]  rackcron.service._firing
    │   │       a manual trigger with a scope a freeze window holds (names the
    │   │       freeze and the racks; nothing changed; force overrides it)
    │   ├── RolloutInProgress  [FAILED_PRECONDITION]  rackcron.service._firing
    │   │       a manual trigger of a schedule whose roll-out is unfinished
    │   │       (names the roll-out; nothing changed)
    │   └── SubmissionRefused  [FAILED_PRECONDITION]  rackcron.service._tasks
    │           TaskOps.submit_task: the rack is gone, blocked by a conflicting
    │           task under the skip policy, its queue full, or no component
    │           matches (submit_tasks reports it per request instead)
    ├── AlreadyExists  [ALREADY_EXISTS]  rackcron.errors
    │       a duplicate schedule name on create
    ├── PermissionDenied  [PERMISSION_DENIED]  rackcron.errors
    │       a token whose scope is short of the request: a RunStep that changes
    │       or deletes a stored freeze, `apply --server` before its first step
    ├── Conflict  [UNKNOWN]  rackcron.errors
    │       a uniqueness violation the reference reports as UNKNOWN (a rename
    │       onto a taken name; an inventory external_id already in use)
    ├── StoreError  [INTERNAL]  rackcron.errors
    │       the database failed; raised ``from`` the driver error. The shim
    │       answers INTERNAL with a correlation id and logs the cause
    ├── ApplyFailed  [the cause's code]  rackcron.reconciler.apply
    │       a step of a local apply failed (or the database under it): names
    │       the change, the step and the cause; nothing was applied
    ├── PartlyApplied  [UNKNOWN]  rackcron.reconciler.backend
    │       `apply --server` stopped at a step the server refused; the CLI
    │       lists the steps applied and not applied, and exits 1
    └── RemoteError  [the server's status]  rackcron.wire.client
            an RPC to a gRPC server (plan/apply/schedules --server) failed

Messages name the field they are about (``schedule.spec: ...``). Database and
driver exceptions never leave the core unwrapped: ``StoreError`` is raised
``from`` them.

Some errors that reach users are not RackcronErrors, on purpose: each is the
error of a value, a file or a driver, which its caller turns into one of the
above, a diagnostic, a task's message or a CLI error. Making them RackcronErrors
would change what they mean where they are caught: the shim answers every
RackcronError with its code, the runner takes a RackcronError for a store
failure (the leases expire), and pydantic needs a ``ValueError`` from a
validator::

    ValueError
    ├── SpecError  rackcron.domain.timing._base
    │   │   a spec, duration, timestamp or time zone does not parse (the
    │   │   service raises InvalidArgument from it; validate: a diagnostic;
    │   │   a CLI option or argument: an error naming it)
    │   └── SpreadError  rackcron.domain.timing._spread
    │           an anchor or jitter is malformed or not allowed on its spec
    │           (its field named: the service's InvalidArgument, validate's
    │           diagnostic at the field)
    ├── RolloutError  rackcron.domain.rollouts
    │       a roll-out policy breaks a rule (its field named), or a resume of a
    │       roll-out that is neither paused nor halted
    ├── BadTokenFile  rackcron.shim.tokens
    │       a line of the gRPC token file breaks a rule (names the file and
    │       the line, never the token): load_tokens raises UnusableConfig
    ├── JSONTooDeep  rackcron.domain.boundedjson
    │       JSON nests deeper than MAX_DEPTH: a saved plan (apply FILE:
    │       InvalidArgument, "not a saved plan"), a controller's answer, the
    │       shim's args_json or summary_json (InvalidArgument)
    ├── LinkRefused  rackcron.reconciler.links
    │       a symbolic link in the tree leaves it, dangles or loops (a
    │       diagnostic of validate, plan and diff)
    └── Unfaithful  rackcron.reconciler.formatting
            `rackcron fmt` cannot lay a file out without changing what it says
            (a comment ruamel.yaml would drop): the file is refused at its line
    OSError
    └── NotRegular  rackcron.reconciler.listing
            a tree's file is no longer a regular file when it is read (the
            file is reported unreadable, a diagnostic)
    Exception
    ├── CommandFailed  rackcron.domain.commands
    │       a plan's command failed in an executor (its index, its cause): apply
    │       reports it as ApplyFailed, naming the change and the command
    ├── ControllerError  rackcron.dispatcher.controllers.base
    │   │   a rack controller could not be reached or refused a call: the
    │   │   runner retries with backoff, then fails the task with the message
    │   ├── ControllerRefused  rackcron.dispatcher.controllers.base
    │   │       the server will not call this controller (host not allowed,
    │   │       credential not resolvable): the task fails at once, unsent
    │   └── SimulatorFull  rackcron.dispatcher.controllers.simulator
    │           the running tasks fill the simulator's --keep-mib: the reference
    │           controller answers 503; the embedded one fails the submit
    ├── Throttled  rackcron.console.auth
    │       a console request from an address that gave too many wrong tokens
    │       (rackcron.token_guesses): the console answers 429 with Retry-After
    └── UnusableConfig  rackcron.shim.server
            `rackcron serve` cannot start its gRPC shim (an unreadable TLS or
            token file, an address in use): a CLI error, exit 1 (2 for the
            token file: a bad --grpc-token-file)

Internal: these never leave the module that defines them (control flow, each
turned into an answer or a diagnostic there)::

    Exception
    ├── _Reject  rackcron.dispatcher.controllers.server
    │       the reference rack controller answers an HTTP error status
    ├── _Unsupported  rackcron.reconciler.schema
    │       a schema the fast check cannot compile: jsonschema alone decides
    └── _Refused  rackcron.reconciler.yamlsource
        │   a YAML node is refused (tag, key, depth): a diagnostic at its mark
        └── _OverBudget  rackcron.reconciler.yamlsource
                the tree's budget of values ran out (aliases expanding across files)

``tests/unit/test_error_tree.py`` checks these trees against the code: every
exception class defined in ``rackcron.*`` is drawn, under its direct base, with
its module.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "Conflict",
    "FailedPrecondition",
    "IllegalTransition",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
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
    """A schedule, scope, rack, component, NVL domain or task does not exist;
    ``suggestions``: names close to the one looked up, for people (never in the message,
    which may go on the wire)."""

    code = "NOT_FOUND"

    def __init__(self, message: str, *, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.suggestions = suggestions

    def suggesting(self, names: tuple[str, ...]) -> NotFound:
        """This error with ``names`` as its suggestions."""
        return type(self)(self.message, suggestions=names)


class FailedPrecondition(RackcronError):
    """The object's current state refuses the operation."""

    code = "FAILED_PRECONDITION"


class IllegalTransition(FailedPrecondition):
    """An event the task lifecycle does not allow in the task's status (``rackcron.domain.lifecycle``)."""


class AlreadyExists(RackcronError):
    """A schedule with this name already exists (create)."""

    code = "ALREADY_EXISTS"


class Conflict(RackcronError):
    """A uniqueness violation the reference service reports as UNKNOWN."""

    code = "UNKNOWN"


class PermissionDenied(RackcronError):
    """The caller's token is of a scope short of what the request needs."""

    code = "PERMISSION_DENIED"


class StoreError(RackcronError):
    """The database failed in a way the caller cannot fix by changing the request."""

    code = "INTERNAL"

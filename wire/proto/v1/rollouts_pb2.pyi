from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ListRolloutsRequest(_message.Message):
    __slots__ = ("schedule", "states", "limit")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    schedule: str
    states: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    def __init__(self, schedule: _Optional[str] = ..., states: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ...) -> None: ...

class ListRolloutsResponse(_message.Message):
    __slots__ = ("rollouts_json",)
    ROLLOUTS_JSON_FIELD_NUMBER: _ClassVar[int]
    rollouts_json: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, rollouts_json: _Optional[_Iterable[str]] = ...) -> None: ...

class GetRolloutRequest(_message.Message):
    __slots__ = ("rollout",)
    ROLLOUT_FIELD_NUMBER: _ClassVar[int]
    rollout: str
    def __init__(self, rollout: _Optional[str] = ...) -> None: ...

class PauseRolloutRequest(_message.Message):
    __slots__ = ("rollout",)
    ROLLOUT_FIELD_NUMBER: _ClassVar[int]
    rollout: str
    def __init__(self, rollout: _Optional[str] = ...) -> None: ...

class ResumeRolloutRequest(_message.Message):
    __slots__ = ("rollout", "allow_failures")
    ROLLOUT_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FAILURES_FIELD_NUMBER: _ClassVar[int]
    rollout: str
    allow_failures: int
    def __init__(self, rollout: _Optional[str] = ..., allow_failures: _Optional[int] = ...) -> None: ...

class AbortRolloutRequest(_message.Message):
    __slots__ = ("rollout", "cancel_active")
    ROLLOUT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    rollout: str
    cancel_active: bool
    def __init__(self, rollout: _Optional[str] = ..., cancel_active: _Optional[bool] = ...) -> None: ...

class RolloutResponse(_message.Message):
    __slots__ = ("rollout_json",)
    ROLLOUT_JSON_FIELD_NUMBER: _ClassVar[int]
    rollout_json: str
    def __init__(self, rollout_json: _Optional[str] = ...) -> None: ...

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class GetExtrasRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetExtrasResponse(_message.Message):
    __slots__ = ("extras_json",)
    EXTRAS_JSON_FIELD_NUMBER: _ClassVar[int]
    extras_json: str
    def __init__(self, extras_json: _Optional[str] = ...) -> None: ...

class RunStepRequest(_message.Message):
    __slots__ = ("rpc", "args_json")
    RPC_FIELD_NUMBER: _ClassVar[int]
    ARGS_JSON_FIELD_NUMBER: _ClassVar[int]
    rpc: str
    args_json: str
    def __init__(self, rpc: _Optional[str] = ..., args_json: _Optional[str] = ...) -> None: ...

class RunStepResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RecordApplyRequest(_message.Message):
    __slots__ = ("revision", "dirty", "source", "author", "summary_json", "owner")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    DIRTY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_JSON_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    revision: str
    dirty: bool
    source: str
    author: str
    summary_json: str
    owner: str
    def __init__(self, revision: _Optional[str] = ..., dirty: _Optional[bool] = ..., source: _Optional[str] = ..., author: _Optional[str] = ..., summary_json: _Optional[str] = ..., owner: _Optional[str] = ...) -> None: ...

class RecordApplyResponse(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

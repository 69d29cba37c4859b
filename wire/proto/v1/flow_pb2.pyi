import datetime

from google.protobuf import empty_pb2 as _empty_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ScheduleSpecType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_SPEC_TYPE_UNSPECIFIED: _ClassVar[ScheduleSpecType]
    SCHEDULE_SPEC_TYPE_INTERVAL: _ClassVar[ScheduleSpecType]
    SCHEDULE_SPEC_TYPE_CRON: _ClassVar[ScheduleSpecType]
    SCHEDULE_SPEC_TYPE_ONE_TIME: _ClassVar[ScheduleSpecType]

class OverlapPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OVERLAP_POLICY_UNSPECIFIED: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_SKIP: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_QUEUE: _ClassVar[OverlapPolicy]

class ConflictStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFLICT_STRATEGY_UNSPECIFIED: _ClassVar[ConflictStrategy]
    CONFLICT_STRATEGY_QUEUE: _ClassVar[ConflictStrategy]
    CONFLICT_STRATEGY_REJECT: _ClassVar[ConflictStrategy]

class RackFilterField(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RACK_FILTER_FIELD_UNSPECIFIED: _ClassVar[RackFilterField]
    RACK_FILTER_FIELD_NAME: _ClassVar[RackFilterField]
    RACK_FILTER_FIELD_MANUFACTURER: _ClassVar[RackFilterField]
    RACK_FILTER_FIELD_MODEL: _ClassVar[RackFilterField]

class ComponentFilterField(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPONENT_FILTER_FIELD_UNSPECIFIED: _ClassVar[ComponentFilterField]
    COMPONENT_FILTER_FIELD_NAME: _ClassVar[ComponentFilterField]
    COMPONENT_FILTER_FIELD_MANUFACTURER: _ClassVar[ComponentFilterField]
    COMPONENT_FILTER_FIELD_MODEL: _ClassVar[ComponentFilterField]
    COMPONENT_FILTER_FIELD_TYPE: _ClassVar[ComponentFilterField]

class ComponentType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPONENT_TYPE_UNKNOWN: _ClassVar[ComponentType]
    COMPONENT_TYPE_COMPUTE: _ClassVar[ComponentType]
    COMPONENT_TYPE_NVSWITCH: _ClassVar[ComponentType]
    COMPONENT_TYPE_POWERSHELF: _ClassVar[ComponentType]
    COMPONENT_TYPE_TORSWITCH: _ClassVar[ComponentType]
    COMPONENT_TYPE_UMS: _ClassVar[ComponentType]
    COMPONENT_TYPE_CDU: _ClassVar[ComponentType]

class TaskStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STATUS_UNKNOWN: _ClassVar[TaskStatus]
    TASK_STATUS_PENDING: _ClassVar[TaskStatus]
    TASK_STATUS_RUNNING: _ClassVar[TaskStatus]
    TASK_STATUS_COMPLETED: _ClassVar[TaskStatus]
    TASK_STATUS_FAILED: _ClassVar[TaskStatus]
    TASK_STATUS_TERMINATED: _ClassVar[TaskStatus]
    TASK_STATUS_WAITING: _ClassVar[TaskStatus]

class TaskExecutorType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_EXECUTOR_TYPE_UNKNOWN: _ClassVar[TaskExecutorType]
    TASK_EXECUTOR_TYPE_TEMPORAL: _ClassVar[TaskExecutorType]
SCHEDULE_SPEC_TYPE_UNSPECIFIED: ScheduleSpecType
SCHEDULE_SPEC_TYPE_INTERVAL: ScheduleSpecType
SCHEDULE_SPEC_TYPE_CRON: ScheduleSpecType
SCHEDULE_SPEC_TYPE_ONE_TIME: ScheduleSpecType
OVERLAP_POLICY_UNSPECIFIED: OverlapPolicy
OVERLAP_POLICY_SKIP: OverlapPolicy
OVERLAP_POLICY_QUEUE: OverlapPolicy
CONFLICT_STRATEGY_UNSPECIFIED: ConflictStrategy
CONFLICT_STRATEGY_QUEUE: ConflictStrategy
CONFLICT_STRATEGY_REJECT: ConflictStrategy
RACK_FILTER_FIELD_UNSPECIFIED: RackFilterField
RACK_FILTER_FIELD_NAME: RackFilterField
RACK_FILTER_FIELD_MANUFACTURER: RackFilterField
RACK_FILTER_FIELD_MODEL: RackFilterField
COMPONENT_FILTER_FIELD_UNSPECIFIED: ComponentFilterField
COMPONENT_FILTER_FIELD_NAME: ComponentFilterField
COMPONENT_FILTER_FIELD_MANUFACTURER: ComponentFilterField
COMPONENT_FILTER_FIELD_MODEL: ComponentFilterField
COMPONENT_FILTER_FIELD_TYPE: ComponentFilterField
COMPONENT_TYPE_UNKNOWN: ComponentType
COMPONENT_TYPE_COMPUTE: ComponentType
COMPONENT_TYPE_NVSWITCH: ComponentType
COMPONENT_TYPE_POWERSHELF: ComponentType
COMPONENT_TYPE_TORSWITCH: ComponentType
COMPONENT_TYPE_UMS: ComponentType
COMPONENT_TYPE_CDU: ComponentType
TASK_STATUS_UNKNOWN: TaskStatus
TASK_STATUS_PENDING: TaskStatus
TASK_STATUS_RUNNING: TaskStatus
TASK_STATUS_COMPLETED: TaskStatus
TASK_STATUS_FAILED: TaskStatus
TASK_STATUS_TERMINATED: TaskStatus
TASK_STATUS_WAITING: TaskStatus
TASK_EXECUTOR_TYPE_UNKNOWN: TaskExecutorType
TASK_EXECUTOR_TYPE_TEMPORAL: TaskExecutorType

class UUID(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class Pagination(_message.Message):
    __slots__ = ("offset", "limit")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    offset: int
    limit: int
    def __init__(self, offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class SubmitTaskResponse(_message.Message):
    __slots__ = ("task_ids",)
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    task_ids: _containers.RepeatedCompositeFieldContainer[UUID]
    def __init__(self, task_ids: _Optional[_Iterable[_Union[UUID, _Mapping]]] = ...) -> None: ...

class ScheduleSpec(_message.Message):
    __slots__ = ("type", "spec", "timezone")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    type: ScheduleSpecType
    spec: str
    timezone: str
    def __init__(self, type: _Optional[_Union[ScheduleSpecType, str]] = ..., spec: _Optional[str] = ..., timezone: _Optional[str] = ...) -> None: ...

class ScheduleConfig(_message.Message):
    __slots__ = ("name", "spec", "overlap_policy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    spec: ScheduleSpec
    overlap_policy: OverlapPolicy
    def __init__(self, name: _Optional[str] = ..., spec: _Optional[_Union[ScheduleSpec, _Mapping]] = ..., overlap_policy: _Optional[_Union[OverlapPolicy, str]] = ...) -> None: ...

class TaskSchedule(_message.Message):
    __slots__ = ("id", "name", "spec", "overlap_policy", "enabled", "next_run_at", "last_run_at", "created_at", "updated_at", "operation_type", "description")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    name: str
    spec: ScheduleSpec
    overlap_policy: OverlapPolicy
    enabled: bool
    next_run_at: _timestamp_pb2.Timestamp
    last_run_at: _timestamp_pb2.Timestamp
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    operation_type: str
    description: str
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ..., name: _Optional[str] = ..., spec: _Optional[_Union[ScheduleSpec, _Mapping]] = ..., overlap_policy: _Optional[_Union[OverlapPolicy, str]] = ..., enabled: _Optional[bool] = ..., next_run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., operation_type: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class ScheduledOperation(_message.Message):
    __slots__ = ("power_on", "power_off", "power_reset", "bring_up", "upgrade_firmware", "ingest")
    POWER_ON_FIELD_NUMBER: _ClassVar[int]
    POWER_OFF_FIELD_NUMBER: _ClassVar[int]
    POWER_RESET_FIELD_NUMBER: _ClassVar[int]
    BRING_UP_FIELD_NUMBER: _ClassVar[int]
    UPGRADE_FIRMWARE_FIELD_NUMBER: _ClassVar[int]
    INGEST_FIELD_NUMBER: _ClassVar[int]
    power_on: PowerOnRackRequest
    power_off: PowerOffRackRequest
    power_reset: PowerResetRackRequest
    bring_up: BringUpRackRequest
    upgrade_firmware: UpgradeFirmwareRequest
    ingest: IngestRackRequest
    def __init__(self, power_on: _Optional[_Union[PowerOnRackRequest, _Mapping]] = ..., power_off: _Optional[_Union[PowerOffRackRequest, _Mapping]] = ..., power_reset: _Optional[_Union[PowerResetRackRequest, _Mapping]] = ..., bring_up: _Optional[_Union[BringUpRackRequest, _Mapping]] = ..., upgrade_firmware: _Optional[_Union[UpgradeFirmwareRequest, _Mapping]] = ..., ingest: _Optional[_Union[IngestRackRequest, _Mapping]] = ...) -> None: ...

class PowerOnRackRequest(_message.Message):
    __slots__ = ("target_spec", "description", "queue_options", "rule_id", "override_readiness_check")
    TARGET_SPEC_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    QUEUE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_READINESS_CHECK_FIELD_NUMBER: _ClassVar[int]
    target_spec: OperationTargetSpec
    description: str
    queue_options: QueueOptions
    rule_id: UUID
    override_readiness_check: bool
    def __init__(self, target_spec: _Optional[_Union[OperationTargetSpec, _Mapping]] = ..., description: _Optional[str] = ..., queue_options: _Optional[_Union[QueueOptions, _Mapping]] = ..., rule_id: _Optional[_Union[UUID, _Mapping]] = ..., override_readiness_check: _Optional[bool] = ...) -> None: ...

class PowerOffRackRequest(_message.Message):
    __slots__ = ("target_spec", "forced", "description", "queue_options", "rule_id", "override_readiness_check")
    TARGET_SPEC_FIELD_NUMBER: _ClassVar[int]
    FORCED_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    QUEUE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_READINESS_CHECK_FIELD_NUMBER: _ClassVar[int]
    target_spec: OperationTargetSpec
    forced: bool
    description: str
    queue_options: QueueOptions
    rule_id: UUID
    override_readiness_check: bool
    def __init__(self, target_spec: _Optional[_Union[OperationTargetSpec, _Mapping]] = ..., forced: _Optional[bool] = ..., description: _Optional[str] = ..., queue_options: _Optional[_Union[QueueOptions, _Mapping]] = ..., rule_id: _Optional[_Union[UUID, _Mapping]] = ..., override_readiness_check: _Optional[bool] = ...) -> None: ...

class PowerResetRackRequest(_message.Message):
    __slots__ = ("target_spec", "forced", "description", "queue_options", "rule_id", "override_readiness_check")
    TARGET_SPEC_FIELD_NUMBER: _ClassVar[int]
    FORCED_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    QUEUE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_READINESS_CHECK_FIELD_NUMBER: _ClassVar[int]
    target_spec: OperationTargetSpec
    forced: bool
    description: str
    queue_options: QueueOptions
    rule_id: UUID
    override_readiness_check: bool
    def __init__(self, target_spec: _Optional[_Union[OperationTargetSpec, _Mapping]] = ..., forced: _Optional[bool] = ..., description: _Optional[str] = ..., queue_options: _Optional[_Union[QueueOptions, _Mapping]] = ..., rule_id: _Optional[_Union[UUID, _Mapping]] = ..., override_readiness_check: _Optional[bool] = ...) -> None: ...

class BringUpRackRequest(_message.Message):
    __slots__ = ("target_spec", "description", "rule_id", "override_readiness_check")
    TARGET_SPEC_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_READINESS_CHECK_FIELD_NUMBER: _ClassVar[int]
    target_spec: OperationTargetSpec
    description: str
    rule_id: UUID
    override_readiness_check: bool
    def __init__(self, target_spec: _Optional[_Union[OperationTargetSpec, _Mapping]] = ..., description: _Optional[str] = ..., rule_id: _Optional[_Union[UUID, _Mapping]] = ..., override_readiness_check: _Optional[bool] = ...) -> None: ...

class IngestRackRequest(_message.Message):
    __slots__ = ("target_spec", "filters", "description", "rule_id")
    TARGET_SPEC_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    target_spec: OperationTargetSpec
    filters: _containers.RepeatedCompositeFieldContainer[Filter]
    description: str
    rule_id: UUID
    def __init__(self, target_spec: _Optional[_Union[OperationTargetSpec, _Mapping]] = ..., filters: _Optional[_Iterable[_Union[Filter, _Mapping]]] = ..., description: _Optional[str] = ..., rule_id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class UpgradeFirmwareRequest(_message.Message):
    __slots__ = ("target_spec", "target_version", "start_time", "end_time", "description", "queue_options", "rule_id", "sub_targets", "override_readiness_check", "authentication_data", "override_version_check")
    TARGET_SPEC_FIELD_NUMBER: _ClassVar[int]
    TARGET_VERSION_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    QUEUE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    SUB_TARGETS_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_READINESS_CHECK_FIELD_NUMBER: _ClassVar[int]
    AUTHENTICATION_DATA_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_VERSION_CHECK_FIELD_NUMBER: _ClassVar[int]
    target_spec: OperationTargetSpec
    target_version: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    description: str
    queue_options: QueueOptions
    rule_id: UUID
    sub_targets: _containers.RepeatedScalarFieldContainer[str]
    override_readiness_check: bool
    authentication_data: FirmwareAuthenticationData
    override_version_check: bool
    def __init__(self, target_spec: _Optional[_Union[OperationTargetSpec, _Mapping]] = ..., target_version: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., description: _Optional[str] = ..., queue_options: _Optional[_Union[QueueOptions, _Mapping]] = ..., rule_id: _Optional[_Union[UUID, _Mapping]] = ..., sub_targets: _Optional[_Iterable[str]] = ..., override_readiness_check: _Optional[bool] = ..., authentication_data: _Optional[_Union[FirmwareAuthenticationData, _Mapping]] = ..., override_version_check: _Optional[bool] = ...) -> None: ...

class QueueOptions(_message.Message):
    __slots__ = ("conflict_strategy", "queue_timeout_seconds")
    CONFLICT_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    conflict_strategy: ConflictStrategy
    queue_timeout_seconds: int
    def __init__(self, conflict_strategy: _Optional[_Union[ConflictStrategy, str]] = ..., queue_timeout_seconds: _Optional[int] = ...) -> None: ...

class FirmwareAuthenticationData(_message.Message):
    __slots__ = ("shared", "per_component")
    SHARED_FIELD_NUMBER: _ClassVar[int]
    PER_COMPONENT_FIELD_NUMBER: _ClassVar[int]
    shared: str
    per_component: PerComponentFirmwareAuthenticationData
    def __init__(self, shared: _Optional[str] = ..., per_component: _Optional[_Union[PerComponentFirmwareAuthenticationData, _Mapping]] = ...) -> None: ...

class PerComponentFirmwareAuthenticationData(_message.Message):
    __slots__ = ("compute", "nvswitch", "powershelf")
    COMPUTE_FIELD_NUMBER: _ClassVar[int]
    NVSWITCH_FIELD_NUMBER: _ClassVar[int]
    POWERSHELF_FIELD_NUMBER: _ClassVar[int]
    compute: str
    nvswitch: str
    powershelf: str
    def __init__(self, compute: _Optional[str] = ..., nvswitch: _Optional[str] = ..., powershelf: _Optional[str] = ...) -> None: ...

class StringQueryInfo(_message.Message):
    __slots__ = ("patterns", "is_wildcard", "use_or")
    PATTERNS_FIELD_NUMBER: _ClassVar[int]
    IS_WILDCARD_FIELD_NUMBER: _ClassVar[int]
    USE_OR_FIELD_NUMBER: _ClassVar[int]
    patterns: _containers.RepeatedScalarFieldContainer[str]
    is_wildcard: bool
    use_or: bool
    def __init__(self, patterns: _Optional[_Iterable[str]] = ..., is_wildcard: _Optional[bool] = ..., use_or: _Optional[bool] = ...) -> None: ...

class Filter(_message.Message):
    __slots__ = ("rack_field", "component_field", "query_info")
    RACK_FIELD_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_FIELD_FIELD_NUMBER: _ClassVar[int]
    QUERY_INFO_FIELD_NUMBER: _ClassVar[int]
    rack_field: RackFilterField
    component_field: ComponentFilterField
    query_info: StringQueryInfo
    def __init__(self, rack_field: _Optional[_Union[RackFilterField, str]] = ..., component_field: _Optional[_Union[ComponentFilterField, str]] = ..., query_info: _Optional[_Union[StringQueryInfo, _Mapping]] = ...) -> None: ...

class OperationTargetSpec(_message.Message):
    __slots__ = ("racks", "components", "nvl_domains")
    RACKS_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    NVL_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    racks: RackTargets
    components: ComponentTargets
    nvl_domains: NVLDomainTargets
    def __init__(self, racks: _Optional[_Union[RackTargets, _Mapping]] = ..., components: _Optional[_Union[ComponentTargets, _Mapping]] = ..., nvl_domains: _Optional[_Union[NVLDomainTargets, _Mapping]] = ...) -> None: ...

class RackTargets(_message.Message):
    __slots__ = ("targets",)
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    targets: _containers.RepeatedCompositeFieldContainer[RackTarget]
    def __init__(self, targets: _Optional[_Iterable[_Union[RackTarget, _Mapping]]] = ...) -> None: ...

class RackTarget(_message.Message):
    __slots__ = ("id", "name", "external_id", "component_types")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    name: str
    external_id: str
    component_types: _containers.RepeatedScalarFieldContainer[ComponentType]
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ..., name: _Optional[str] = ..., external_id: _Optional[str] = ..., component_types: _Optional[_Iterable[_Union[ComponentType, str]]] = ...) -> None: ...

class ComponentTargets(_message.Message):
    __slots__ = ("targets",)
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    targets: _containers.RepeatedCompositeFieldContainer[ComponentTarget]
    def __init__(self, targets: _Optional[_Iterable[_Union[ComponentTarget, _Mapping]]] = ...) -> None: ...

class ComponentTarget(_message.Message):
    __slots__ = ("id", "external")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    external: ExternalRef
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ..., external: _Optional[_Union[ExternalRef, _Mapping]] = ...) -> None: ...

class ExternalRef(_message.Message):
    __slots__ = ("type", "id")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    type: ComponentType
    id: str
    def __init__(self, type: _Optional[_Union[ComponentType, str]] = ..., id: _Optional[str] = ...) -> None: ...

class NVLDomainTargets(_message.Message):
    __slots__ = ("targets",)
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    targets: _containers.RepeatedCompositeFieldContainer[NVLDomainTarget]
    def __init__(self, targets: _Optional[_Iterable[_Union[NVLDomainTarget, _Mapping]]] = ...) -> None: ...

class NVLDomainTarget(_message.Message):
    __slots__ = ("id", "name", "external_id", "component_types")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    name: str
    external_id: str
    component_types: _containers.RepeatedScalarFieldContainer[ComponentType]
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ..., name: _Optional[str] = ..., external_id: _Optional[str] = ..., component_types: _Optional[_Iterable[_Union[ComponentType, str]]] = ...) -> None: ...

class ComponentTypes(_message.Message):
    __slots__ = ("types",)
    TYPES_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedScalarFieldContainer[ComponentType]
    def __init__(self, types: _Optional[_Iterable[_Union[ComponentType, str]]] = ...) -> None: ...

class ComponentFilter(_message.Message):
    __slots__ = ("types", "components")
    TYPES_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    types: ComponentTypes
    components: ComponentTargets
    def __init__(self, types: _Optional[_Union[ComponentTypes, _Mapping]] = ..., components: _Optional[_Union[ComponentTargets, _Mapping]] = ...) -> None: ...

class CreateTaskScheduleRequest(_message.Message):
    __slots__ = ("schedule", "operation")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    schedule: ScheduleConfig
    operation: ScheduledOperation
    def __init__(self, schedule: _Optional[_Union[ScheduleConfig, _Mapping]] = ..., operation: _Optional[_Union[ScheduledOperation, _Mapping]] = ...) -> None: ...

class GetTaskScheduleRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class ListTaskSchedulesRequest(_message.Message):
    __slots__ = ("rack_id", "pagination", "enabled_only")
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    ENABLED_ONLY_FIELD_NUMBER: _ClassVar[int]
    rack_id: UUID
    pagination: Pagination
    enabled_only: bool
    def __init__(self, rack_id: _Optional[_Union[UUID, _Mapping]] = ..., pagination: _Optional[_Union[Pagination, _Mapping]] = ..., enabled_only: _Optional[bool] = ...) -> None: ...

class ListTaskSchedulesResponse(_message.Message):
    __slots__ = ("task_schedules", "total")
    TASK_SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    task_schedules: _containers.RepeatedCompositeFieldContainer[TaskSchedule]
    total: int
    def __init__(self, task_schedules: _Optional[_Iterable[_Union[TaskSchedule, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class UpdateTaskScheduleRequest(_message.Message):
    __slots__ = ("id", "schedule", "update_mask")
    ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    schedule: ScheduleConfig
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ..., schedule: _Optional[_Union[ScheduleConfig, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class PauseTaskScheduleRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class ResumeTaskScheduleRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class DeleteTaskScheduleRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class TriggerTaskScheduleRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class TaskScheduleScope(_message.Message):
    __slots__ = ("id", "schedule_id", "rack_id", "types", "components", "last_task_id", "created_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    LAST_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    schedule_id: UUID
    rack_id: UUID
    types: ComponentTypes
    components: ComponentTargets
    last_task_id: UUID
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ..., schedule_id: _Optional[_Union[UUID, _Mapping]] = ..., rack_id: _Optional[_Union[UUID, _Mapping]] = ..., types: _Optional[_Union[ComponentTypes, _Mapping]] = ..., components: _Optional[_Union[ComponentTargets, _Mapping]] = ..., last_task_id: _Optional[_Union[UUID, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AddTaskScheduleScopeRequest(_message.Message):
    __slots__ = ("schedule_id", "target_spec")
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SPEC_FIELD_NUMBER: _ClassVar[int]
    schedule_id: UUID
    target_spec: OperationTargetSpec
    def __init__(self, schedule_id: _Optional[_Union[UUID, _Mapping]] = ..., target_spec: _Optional[_Union[OperationTargetSpec, _Mapping]] = ...) -> None: ...

class AddTaskScheduleScopeResponse(_message.Message):
    __slots__ = ("scopes",)
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    scopes: _containers.RepeatedCompositeFieldContainer[TaskScheduleScope]
    def __init__(self, scopes: _Optional[_Iterable[_Union[TaskScheduleScope, _Mapping]]] = ...) -> None: ...

class RemoveTaskScheduleScopeRequest(_message.Message):
    __slots__ = ("scope_id",)
    SCOPE_ID_FIELD_NUMBER: _ClassVar[int]
    scope_id: UUID
    def __init__(self, scope_id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class UpdateTaskScheduleScopeRequest(_message.Message):
    __slots__ = ("schedule_id", "desired_scope")
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    DESIRED_SCOPE_FIELD_NUMBER: _ClassVar[int]
    schedule_id: UUID
    desired_scope: OperationTargetSpec
    def __init__(self, schedule_id: _Optional[_Union[UUID, _Mapping]] = ..., desired_scope: _Optional[_Union[OperationTargetSpec, _Mapping]] = ...) -> None: ...

class UpdateTaskScheduleScopeResponse(_message.Message):
    __slots__ = ("scopes", "added", "removed", "updated")
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    scopes: _containers.RepeatedCompositeFieldContainer[TaskScheduleScope]
    added: int
    removed: int
    updated: int
    def __init__(self, scopes: _Optional[_Iterable[_Union[TaskScheduleScope, _Mapping]]] = ..., added: _Optional[int] = ..., removed: _Optional[int] = ..., updated: _Optional[int] = ...) -> None: ...

class ListTaskScheduleScopesRequest(_message.Message):
    __slots__ = ("schedule_id",)
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    schedule_id: UUID
    def __init__(self, schedule_id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class ListTaskScheduleScopesResponse(_message.Message):
    __slots__ = ("scopes",)
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    scopes: _containers.RepeatedCompositeFieldContainer[TaskScheduleScope]
    def __init__(self, scopes: _Optional[_Iterable[_Union[TaskScheduleScope, _Mapping]]] = ...) -> None: ...

class CheckScheduleConflictsRequest(_message.Message):
    __slots__ = ("operation", "exclude_schedule_id")
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    operation: ScheduledOperation
    exclude_schedule_id: UUID
    def __init__(self, operation: _Optional[_Union[ScheduledOperation, _Mapping]] = ..., exclude_schedule_id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class CheckScheduleConflictsResponse(_message.Message):
    __slots__ = ("conflicts",)
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    conflicts: _containers.RepeatedCompositeFieldContainer[TaskSchedule]
    def __init__(self, conflicts: _Optional[_Iterable[_Union[TaskSchedule, _Mapping]]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("id", "operation", "rack_id", "component_uuids", "description", "executor_type", "execution_id", "status", "message", "queue_expires_at", "created_at", "finished_at", "applied_rule_id", "updated_at", "started_at", "report")
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_UUIDS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    APPLIED_RULE_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    id: UUID
    operation: str
    rack_id: UUID
    component_uuids: _containers.RepeatedCompositeFieldContainer[UUID]
    description: str
    executor_type: TaskExecutorType
    execution_id: str
    status: TaskStatus
    message: str
    queue_expires_at: _timestamp_pb2.Timestamp
    created_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    applied_rule_id: UUID
    updated_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    report: str
    def __init__(self, id: _Optional[_Union[UUID, _Mapping]] = ..., operation: _Optional[str] = ..., rack_id: _Optional[_Union[UUID, _Mapping]] = ..., component_uuids: _Optional[_Iterable[_Union[UUID, _Mapping]]] = ..., description: _Optional[str] = ..., executor_type: _Optional[_Union[TaskExecutorType, str]] = ..., execution_id: _Optional[str] = ..., status: _Optional[_Union[TaskStatus, str]] = ..., message: _Optional[str] = ..., queue_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., applied_rule_id: _Optional[_Union[UUID, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., report: _Optional[str] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ("rack_id", "active_only", "pagination", "component_id", "with_report")
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_ONLY_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_ID_FIELD_NUMBER: _ClassVar[int]
    WITH_REPORT_FIELD_NUMBER: _ClassVar[int]
    rack_id: UUID
    active_only: bool
    pagination: Pagination
    component_id: UUID
    with_report: bool
    def __init__(self, rack_id: _Optional[_Union[UUID, _Mapping]] = ..., active_only: _Optional[bool] = ..., pagination: _Optional[_Union[Pagination, _Mapping]] = ..., component_id: _Optional[_Union[UUID, _Mapping]] = ..., with_report: _Optional[bool] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ("tasks", "total")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    total: int
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class GetTasksByIDsRequest(_message.Message):
    __slots__ = ("task_ids",)
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    task_ids: _containers.RepeatedCompositeFieldContainer[UUID]
    def __init__(self, task_ids: _Optional[_Iterable[_Union[UUID, _Mapping]]] = ...) -> None: ...

class GetTasksByIDsResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: UUID
    def __init__(self, task_id: _Optional[_Union[UUID, _Mapping]] = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

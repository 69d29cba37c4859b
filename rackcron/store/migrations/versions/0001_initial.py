"""Initial schema: inventory, schedules and scopes, tasks, apply log.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column[Any]]:
    return [
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "rack",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("external_id", sa.String(255), nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("external_id", name="uq_rack_external_id"),
    )
    op.create_index("ix_rack_name", "rack", ["name"])
    op.create_table(
        "component",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column(
            "rack_id",
            sa.Uuid,
            sa.ForeignKey("rack.id", ondelete="SET NULL", name="fk_component_rack_id_rack"),
        ),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("external_id", sa.String(255), nullable=True),
        sa.Column("bmc_mac", sa.String(17), nullable=True),
        *_timestamps(),
    )
    for column in ("rack_id", "external_id", "bmc_mac"):
        op.create_index(f"ix_component_{column}", "component", [column])
    op.create_table(
        "nvl_domain",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("external_id", sa.String(255), nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("external_id", name="uq_nvl_domain_external_id"),
    )
    op.create_index("ix_nvl_domain_name", "nvl_domain", ["name"])
    op.create_table(
        "nvl_domain_rack",
        sa.Column(
            "domain_id",
            sa.Uuid,
            sa.ForeignKey(
                "nvl_domain.id", ondelete="CASCADE", name="fk_nvl_domain_rack_domain_id_nvl_domain"
            ),
            primary_key=True,
        ),
        sa.Column(
            "rack_id",
            sa.Uuid,
            sa.ForeignKey("rack.id", ondelete="CASCADE", name="fk_nvl_domain_rack_rack_id_rack"),
            primary_key=True,
        ),
        sa.Column("ordinal", sa.Integer, nullable=False),
    )
    op.create_table(
        "task_schedule",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("spec_type", sa.String(16), nullable=False),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("operation_type", sa.String(64), nullable=False),
        sa.Column("operation_code", sa.String(64), nullable=False),
        sa.Column("operation_information", JSON, nullable=False),
        sa.Column("overlap_policy", sa.String(16), nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("next_run_at", UTCDateTime, nullable=True),
        sa.Column("last_run_at", UTCDateTime, nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("name", name="uq_task_schedule_name"),
    )
    op.create_index(
        "ix_task_schedule_due",
        "task_schedule",
        ["next_run_at"],
        sqlite_where=sa.text("enabled = 1 AND next_run_at IS NOT NULL"),
        postgresql_where=sa.text("enabled = true AND next_run_at IS NOT NULL"),
    )
    op.create_index("ix_task_schedule_created", "task_schedule", ["created_at", "id"])
    op.create_table(
        "task",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column(
            "schedule_id",
            sa.Uuid,
            sa.ForeignKey(
                "task_schedule.id", ondelete="SET NULL", name="fk_task_schedule_id_task_schedule"
            ),
        ),
        sa.Column("scope_id", sa.Uuid, nullable=True),
        sa.Column("rack_id", sa.Uuid, nullable=False),
        sa.Column("operation", sa.String(255), nullable=False),
        sa.Column("operation_type", sa.String(64), nullable=False),
        sa.Column("operation_code", sa.String(64), nullable=False),
        sa.Column("operation_information", JSON, nullable=False),
        sa.Column("component_uuids", JSON, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("queue_expires_at", UTCDateTime, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("started_at", UTCDateTime, nullable=True),
        sa.Column("finished_at", UTCDateTime, nullable=True),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_task_schedule_id", "task", ["schedule_id"])
    op.create_index("ix_task_scope_id", "task", ["scope_id"])
    op.create_index("ix_task_rack_status", "task", ["rack_id", "status"])
    op.create_index("ix_task_created", "task", ["created_at", "id"])
    op.create_table(
        "task_component",
        sa.Column(
            "task_id",
            sa.Uuid,
            sa.ForeignKey("task.id", ondelete="CASCADE", name="fk_task_component_task_id_task"),
            primary_key=True,
        ),
        sa.Column("component_id", sa.Uuid, primary_key=True),
    )
    op.create_index("ix_task_component_component_id", "task_component", ["component_id"])
    op.create_table(
        "task_schedule_scope",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column(
            "schedule_id",
            sa.Uuid,
            sa.ForeignKey(
                "task_schedule.id",
                ondelete="CASCADE",
                name="fk_task_schedule_scope_schedule_id_task_schedule",
            ),
            nullable=False,
        ),
        sa.Column(
            "rack_id",
            sa.Uuid,
            sa.ForeignKey("rack.id", name="fk_task_schedule_scope_rack_id_rack"),
            nullable=False,
        ),
        sa.Column("component_filter", JSON, nullable=True),
        sa.Column(
            "last_task_id",
            sa.Uuid,
            sa.ForeignKey(
                "task.id", ondelete="SET NULL", name="fk_task_schedule_scope_last_task_id_task"
            ),
        ),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint(
            "schedule_id", "rack_id", name="uq_task_schedule_scope_schedule_id_rack_id"
        ),
    )
    op.create_index("ix_task_schedule_scope_rack_id", "task_schedule_scope", ["rack_id"])
    op.create_table(
        "apply_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("revision", sa.String(64), nullable=True),
        sa.Column("dirty", sa.Boolean, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("author", sa.String(255), nullable=False),
        sa.Column("applied_at", UTCDateTime, nullable=False),
        sa.Column("summary", JSON, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "apply_log",
        "task_schedule_scope",
        "task_component",
        "task",
        "task_schedule",
        "nvl_domain_rack",
        "nvl_domain",
        "component",
        "rack",
    ):
        op.drop_table(table)

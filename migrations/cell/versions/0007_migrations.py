"""migrations: the moves of instances (resize, migrate, live migrate,
evacuate)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24

One row per move, as Nova keeps them: the hosts and nodes it goes from
and to, its type and status, the flavors before and after, the vm state
to come back to, and who asked. ``uuid`` is also the consumer under
which the scheduler holds the source host's resources until the move is
confirmed or reverted.
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'migrations',
        sa.Column('id', sa.Integer(), primary_key=True, nullable=False),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('migration_type', sa.String(32), nullable=False),
        sa.Column('status', sa.String(255), nullable=False),
        sa.Column('source_compute', sa.String(255), nullable=True),
        sa.Column('source_node', sa.String(255), nullable=True),
        sa.Column('dest_compute', sa.String(255), nullable=True),
        sa.Column('dest_node', sa.String(255), nullable=True),
        sa.Column('dest_host', sa.String(255), nullable=True),
        sa.Column('old_instance_type_id', sa.Integer(), nullable=True),
        sa.Column('new_instance_type_id', sa.Integer(), nullable=True),
        sa.Column('old_flavor', types.MediumText(), nullable=True),
        sa.Column('new_flavor', types.MediumText(), nullable=True),
        sa.Column('old_vm_state', sa.String(255), nullable=True),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.Column('deleted_at', types.DateTime(), nullable=True),
        sa.Column('deleted', sa.Boolean(), nullable=False,
                  server_default=sa.false()),
        sa.Index('migrations_uuid_idx', 'uuid', unique=True),
        sa.Index('migrations_instance_uuid_status_idx', 'instance_uuid',
                 'status'),
        sa.Index('migrations_source_compute_status_idx', 'source_compute',
                 'status'),
        sa.Index('migrations_dest_compute_status_idx', 'dest_compute',
                 'status'),
        sa.Index('migrations_updated_at_idx', 'updated_at'),
    )

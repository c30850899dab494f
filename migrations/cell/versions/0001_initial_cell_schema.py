"""initial cell schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 19:35:42.296477
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('instance_faults',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column(
                        'instance_uuid', sa.String(
                            length=36), nullable=False),
                    sa.Column('code', sa.Integer(), nullable=False),
                    sa.Column(
                        'message', sa.String(
                            length=255), nullable=False),
                    sa.Column('details', types.MediumText(), nullable=True),
                    sa.Column('host', sa.String(length=255), nullable=True),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id')
                    )
    with op.batch_alter_table('instance_faults', schema=None) as batch_op:
        batch_op.create_index(
            'instance_faults_instance_uuid_idx',
            ['instance_uuid'],
            unique=False)

    op.create_table('instances',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('uuid', sa.String(length=36), nullable=False),
                    sa.Column(
                        'display_name', sa.String(
                            length=255), nullable=True),
                    sa.Column('display_description', sa.Text(),
                              nullable=True),
                    sa.Column(
                        'hostname', sa.String(
                            length=255), nullable=True),
                    sa.Column(
                        'project_id', sa.String(
                            length=255), nullable=False),
                    sa.Column('user_id', sa.String(length=255), nullable=True),
                    sa.Column('host', sa.String(length=255), nullable=True),
                    sa.Column('node', sa.String(length=255), nullable=True),
                    sa.Column(
                        'vm_state', sa.String(
                            length=255), nullable=False),
                    sa.Column(
                        'task_state', sa.String(
                            length=255), nullable=True),
                    sa.Column('power_state', sa.Integer(), nullable=False),
                    sa.Column('flavor', types.MediumText(), nullable=False),
                    sa.Column(
                        'image_ref', sa.String(
                            length=255), nullable=True),
                    sa.Column(
                        'availability_zone', sa.String(
                            length=255), nullable=True),
                    sa.Column(
                        'key_name', sa.String(
                            length=255), nullable=True),
                    sa.Column('metadata', types.MediumText(), nullable=True),
                    sa.Column(
                        'reservation_id', sa.String(
                            length=255), nullable=True),
                    sa.Column('launch_index', sa.Integer(), nullable=True),
                    sa.Column('launched_at', types.DateTime(), nullable=True),
                    sa.Column('terminated_at', types.DateTime(),
                              nullable=True),
                    sa.Column('deleted_at', types.DateTime(), nullable=True),
                    sa.Column('deleted', sa.Boolean(), nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('uuid')
                    )
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.create_index(
            'instances_host_deleted_idx', [
                'host', 'deleted'], unique=False)
        batch_op.create_index(
            'instances_project_id_deleted_idx', [
                'project_id', 'deleted'], unique=False)

    op.create_table('services',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('host', sa.String(length=255), nullable=False),
                    sa.Column('binary', sa.String(length=255), nullable=False),
                    sa.Column('topic', sa.String(length=255), nullable=False),
                    sa.Column('disabled', sa.Boolean(), nullable=False),
                    sa.Column(
                        'disabled_reason', sa.String(
                            length=255), nullable=True),
                    sa.Column('report_count', sa.Integer(), nullable=False),
                    sa.Column('last_seen_up', types.DateTime(), nullable=True),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('host', 'binary')
                    )

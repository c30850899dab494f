"""instance actions and their events

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'instance_actions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('instance_uuid', sa.String(length=36), nullable=False),
        sa.Column('request_id', sa.String(length=255), nullable=False),
        sa.Column('action', sa.String(length=255), nullable=False),
        sa.Column('project_id', sa.String(length=255), nullable=True),
        sa.Column('user_id', sa.String(length=255), nullable=True),
        sa.Column('start_time', types.DateTime(), nullable=False),
        sa.Column('message', sa.String(length=255), nullable=True),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('instance_uuid', 'request_id'))
    with op.batch_alter_table('instance_actions') as batch_op:
        batch_op.create_index('instance_actions_instance_uuid_idx',
                              ['instance_uuid'], unique=False)
    op.create_table(
        'instance_actions_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('action_id', sa.Integer(), nullable=False),
        sa.Column('event', sa.String(length=255), nullable=False),
        sa.Column('start_time', types.DateTime(), nullable=False),
        sa.Column('finish_time', types.DateTime(), nullable=True),
        sa.Column('result', sa.String(length=255), nullable=True),
        sa.Column('host', sa.String(length=255), nullable=True),
        sa.Column('details', types.MediumText(), nullable=True),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['action_id'], ['instance_actions.id']),
        sa.PrimaryKeyConstraint('id'))
    with op.batch_alter_table('instance_actions_events') as batch_op:
        batch_op.create_index('instance_actions_events_action_id_idx',
                              ['action_id'], unique=False)

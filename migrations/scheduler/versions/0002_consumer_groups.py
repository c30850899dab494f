"""consumer groups: server group policies that claims enforce

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
        'consumer_groups',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('policy', sa.String(length=255), nullable=False),
        sa.Column('max_per_host', sa.Integer(), nullable=False),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('uuid'))
    op.create_table(
        'consumer_group_members',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('group_id', sa.Integer(), nullable=False),
        sa.Column('consumer_id', sa.String(length=36), nullable=False),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['group_id'], ['consumer_groups.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('group_id', 'consumer_id'))
    op.create_index('consumer_group_members_consumer_id_idx',
                    'consumer_group_members', ['consumer_id'])

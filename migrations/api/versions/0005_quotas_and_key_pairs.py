"""quotas, quota classes, key pairs, and what an instance counts

Revision ID: 0005
Revises: 0003
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0005'
down_revision = '0003'
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column('created_at', types.DateTime(), nullable=False),
            sa.Column('updated_at', types.DateTime(), nullable=True)]


def upgrade():
    op.create_table(
        'quotas',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('project_id', 'resource'))
    op.create_table(
        'quota_classes',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('class_name', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('class_name', 'resource'))
    op.create_table(
        'project_quota_locks',
        sa.Column('project_id', sa.String(255), primary_key=True),
        sa.Column('generation', sa.Integer(), nullable=False))
    op.create_table(
        'key_pairs',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('fingerprint', sa.String(255)),
        sa.Column('public_key', sa.Text()),
        sa.Column('type', sa.String(10), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('user_id', 'name'))
    with op.batch_alter_table('instance_mappings') as batch:
        batch.add_column(sa.Column('vcpus', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('memory_mb', sa.Integer(),
                                   nullable=True))


def downgrade():
    with op.batch_alter_table('instance_mappings') as batch:
        batch.drop_column('memory_mb')
        batch.drop_column('vcpus')
    op.drop_table('key_pairs')
    op.drop_table('project_quota_locks')
    op.drop_table('quota_classes')
    op.drop_table('quotas')

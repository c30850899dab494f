"""host aggregates: hosts and metadata, with a generation per aggregate

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'aggregates',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('generation', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.Column('deleted', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.Column('deleted_at', types.DateTime(), nullable=True),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('uuid', name='uniq_aggregates0uuid'),
        # A live aggregate has deleted = 0; a deleted one its own id, so
        # names are unique among live aggregates only.
        sa.UniqueConstraint('name', 'deleted',
                            name='uniq_aggregates0name0deleted'))
    op.create_table(
        'aggregate_hosts',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('aggregate_id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.ForeignKeyConstraint(['aggregate_id'], ['aggregates.id']),
        sa.UniqueConstraint('aggregate_id', 'host',
                            name='uniq_aggregate_hosts0aggregate_id0host'))
    op.create_index('aggregate_hosts_host_idx', 'aggregate_hosts', ['host'])
    op.create_table(
        'aggregate_metadata',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('aggregate_id', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255), nullable=False),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.ForeignKeyConstraint(['aggregate_id'], ['aggregates.id']),
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uniq_aggregate_metadata0aggregate_id0key'))


def downgrade():
    op.drop_table('aggregate_metadata')
    op.drop_index('aggregate_hosts_host_idx', table_name='aggregate_hosts')
    op.drop_table('aggregate_hosts')
    op.drop_table('aggregates')

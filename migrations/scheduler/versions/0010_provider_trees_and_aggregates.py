"""provider trees, providers without a compute, and provider aggregates

A provider may have a parent (a device or a NUMA cell under its compute
node, a bandwidth provider under a host) and belongs to the tree of its
root; ``root_provider_id`` NULL means the provider is a root. A provider
made through the Placement API has no compute host. A provider's own
aggregates (``resource_provider_aggregates``) are those written through
the Placement API; those of its host's host aggregates come on top.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('resource_providers') as batch:
        batch.alter_column('host', existing_type=sa.String(255),
                           nullable=True)
        batch.add_column(sa.Column('parent_provider_id', sa.Integer,
                                   nullable=True))
        batch.add_column(sa.Column('root_provider_id', sa.Integer,
                                   nullable=True))
        batch.create_foreign_key(
            'resource_providers_parent_provider_id_fkey',
            'resource_providers', ['parent_provider_id'], ['id'])
        batch.create_index('resource_providers_parent_provider_id_idx',
                           ['parent_provider_id'])
        batch.create_index('resource_providers_root_provider_id_idx',
                           ['root_provider_id'])
        batch.create_index('resource_providers_name_idx', ['name'])
    op.create_table(
        'resource_provider_aggregates',
        sa.Column('resource_provider_id', sa.Integer,
                  sa.ForeignKey('resource_providers.id'), primary_key=True),
        sa.Column('aggregate_uuid', sa.String(36), primary_key=True),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True))
    op.create_index('resource_provider_aggregates_aggregate_uuid_idx',
                    'resource_provider_aggregates', ['aggregate_uuid'])


def downgrade():
    op.drop_index('resource_provider_aggregates_aggregate_uuid_idx',
                  table_name='resource_provider_aggregates')
    op.drop_table('resource_provider_aggregates')
    with op.batch_alter_table('resource_providers') as batch:
        batch.drop_index('resource_providers_name_idx')
        batch.drop_index('resource_providers_root_provider_id_idx')
        batch.drop_index('resource_providers_parent_provider_id_idx')
        batch.drop_constraint('resource_providers_parent_provider_id_fkey',
                              type_='foreignkey')
        batch.drop_column('root_provider_id')
        batch.drop_column('parent_provider_id')
        batch.alter_column('host', existing_type=sa.String(255),
                           nullable=False)

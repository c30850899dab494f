"""traits of resource providers, custom resource classes, and the unit
limits of an inventory

A provider's traits say what it has beyond amounts (a CPU flag, a
device's kind); ``reported`` tells the traits its compute reported, which
its next report replaces, from those an operator set, which it keeps. A
custom resource class (``CUSTOM_*``) is recorded once made; the standard
ones come from the os-resource-classes library. An inventory gains the
smallest, largest and step of one allocation, as Placement's has.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column('created_at', types.DateTime(), nullable=False),
            sa.Column('updated_at', types.DateTime(), nullable=True)]


def upgrade():
    op.create_table(
        'traits',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('name', sa.String(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('name', name='uniq_traits0name'))
    op.create_table(
        'resource_provider_traits',
        sa.Column('resource_provider_id', sa.Integer,
                  sa.ForeignKey('resource_providers.id'), primary_key=True),
        sa.Column('trait_id', sa.Integer, sa.ForeignKey('traits.id'),
                  primary_key=True),
        sa.Column('reported', sa.Boolean, nullable=False,
                  server_default=sa.false()),
        *_timestamps())
    op.create_index('resource_provider_traits_trait_id_idx',
                    'resource_provider_traits', ['trait_id'])
    op.create_table(
        'resource_classes',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('name', sa.String(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('name', name='uniq_resource_classes0name'))
    with op.batch_alter_table('inventories') as batch:
        batch.add_column(sa.Column('min_unit', sa.Integer, nullable=False,
                                   server_default='1'))
        batch.add_column(sa.Column('max_unit', sa.Integer, nullable=True))
        batch.add_column(sa.Column('step_size', sa.Integer, nullable=False,
                                   server_default='1'))


def downgrade():
    with op.batch_alter_table('inventories') as batch:
        batch.drop_column('step_size')
        batch.drop_column('max_unit')
        batch.drop_column('min_unit')
    op.drop_table('resource_classes')
    op.drop_index('resource_provider_traits_trait_id_idx',
                  table_name='resource_provider_traits')
    op.drop_table('resource_provider_traits')
    op.drop_table('traits')

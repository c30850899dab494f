"""initial scheduler schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 19:35:42.309013
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('resource_providers',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('uuid', sa.String(length=36), nullable=False),
                    sa.Column('host', sa.String(length=255), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column(
                        'cell_uuid', sa.String(
                            length=36), nullable=True),
                    sa.Column(
                        'availability_zone', sa.String(
                            length=255), nullable=True),
                    sa.Column('generation', sa.Integer(), nullable=False),
                    sa.Column('disabled', sa.Boolean(), nullable=False),
                    sa.Column('last_report_at', types.DateTime(),
                              nullable=True),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('host', 'name'),
                    sa.UniqueConstraint('uuid')
                    )
    op.create_table('allocations',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column(
                        'resource_provider_id',
                        sa.Integer(),
                        nullable=False),
                    sa.Column(
                        'consumer_id', sa.String(
                            length=36), nullable=False),
                    sa.Column(
                        'resource_class', sa.String(
                            length=255), nullable=False),
                    sa.Column('used', sa.Integer(), nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(['resource_provider_id'], [
                        'resource_providers.id'], ),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint(
                        'resource_provider_id',
                        'consumer_id',
                        'resource_class')
                    )
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.create_index(
            'allocations_consumer_id_idx',
            ['consumer_id'],
            unique=False)

    op.create_table('inventories',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column(
                        'resource_provider_id',
                        sa.Integer(),
                        nullable=False),
                    sa.Column(
                        'resource_class', sa.String(
                            length=255), nullable=False),
                    sa.Column('total', sa.Integer(), nullable=False),
                    sa.Column('reserved', sa.Integer(), nullable=False),
                    sa.Column('allocation_ratio', sa.Float(), nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(['resource_provider_id'], [
                        'resource_providers.id'], ),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint(
                        'resource_provider_id', 'resource_class')
                    )

"""initial api schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 19:35:42.280213
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('build_requests',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column(
                        'instance_uuid', sa.String(
                            length=36), nullable=False),
                    sa.Column(
                        'project_id', sa.String(
                            length=255), nullable=False),
                    sa.Column('instance', types.MediumText(), nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('instance_uuid')
                    )
    with op.batch_alter_table('build_requests', schema=None) as batch_op:
        batch_op.create_index(
            'build_requests_project_id_idx',
            ['project_id'],
            unique=False)

    op.create_table('cell_mappings',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('uuid', sa.String(length=36), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column('transport_url', sa.Text(), nullable=False),
                    sa.Column(
                        'database_connection',
                        sa.Text(),
                        nullable=False),
                    sa.Column('disabled', sa.Boolean(), nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('name'),
                    sa.UniqueConstraint('uuid')
                    )
    op.create_table('flavors',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column(
                        'flavorid', sa.String(
                            length=255), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column('memory_mb', sa.Integer(), nullable=False),
                    sa.Column('vcpus', sa.Integer(), nullable=False),
                    sa.Column('root_gb', sa.Integer(), nullable=False),
                    sa.Column('ephemeral_gb', sa.Integer(), nullable=False),
                    sa.Column('swap', sa.Integer(), nullable=False),
                    sa.Column('rxtx_factor', sa.Float(), nullable=False),
                    sa.Column('is_public', sa.Boolean(), nullable=False),
                    sa.Column('disabled', sa.Boolean(), nullable=False),
                    sa.Column('description', sa.Text(), nullable=True),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('flavorid'),
                    sa.UniqueConstraint('name')
                    )
    op.create_table('request_specs',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column(
                        'instance_uuid', sa.String(
                            length=36), nullable=False),
                    sa.Column('spec', types.MediumText(), nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('instance_uuid')
                    )
    op.create_table('flavor_extra_specs',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('flavor_id', sa.Integer(), nullable=False),
                    sa.Column('key', sa.String(length=255), nullable=False),
                    sa.Column('value', sa.String(length=255), nullable=True),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(['flavor_id'], ['flavors.id'], ),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('flavor_id', 'key')
                    )
    op.create_table('host_mappings',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('host', sa.String(length=255), nullable=False),
                    sa.Column('cell_id', sa.Integer(), nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(
                        ['cell_id'], ['cell_mappings.id'], ),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('host')
                    )
    op.create_table('instance_mappings',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column(
                        'instance_uuid', sa.String(
                            length=36), nullable=False),
                    sa.Column('cell_id', sa.Integer(), nullable=True),
                    sa.Column(
                        'project_id', sa.String(
                            length=255), nullable=False),
                    sa.Column('user_id', sa.String(length=255), nullable=True),
                    sa.Column(
                        'queued_for_delete',
                        sa.Boolean(),
                        nullable=False),
                    sa.Column('created_at', types.DateTime(), nullable=False),
                    sa.Column('updated_at', types.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(
                        ['cell_id'], ['cell_mappings.id'], ),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('instance_uuid')
                    )
    with op.batch_alter_table('instance_mappings', schema=None) as batch_op:
        batch_op.create_index(
            'instance_mappings_project_id_idx',
            ['project_id'],
            unique=False)

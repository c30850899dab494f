"""images users make in the built-in image catalog

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02

The built-in catalog (``[glance] source = builtin``, served by the
all-in-one under ``/image``) takes uploads and snapshots: each image is a
row, its custom properties and tags JSON in it. MediumText (MEDIUMTEXT on
MySQL/MariaDB, TEXT elsewhere) holds them: 128 properties or tags of
four-byte characters pass TEXT's 64 KiB.
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'images',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('status', sa.String(30), nullable=False),
        sa.Column('visibility', sa.String(9), nullable=False),
        sa.Column('protected', sa.Boolean(), nullable=False),
        sa.Column('os_hidden', sa.Boolean(), nullable=False),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('disk_format', sa.String(20), nullable=True),
        sa.Column('container_format', sa.String(20), nullable=True),
        sa.Column('size', sa.BigInteger(), nullable=True),
        sa.Column('checksum', sa.String(32), nullable=True),
        sa.Column('os_hash_algo', sa.String(64), nullable=True),
        sa.Column('os_hash_value', sa.String(128), nullable=True),
        sa.Column('min_disk', sa.Integer(), nullable=False),
        sa.Column('min_ram', sa.Integer(), nullable=False),
        sa.Column('properties', types.MediumText(), nullable=False),
        sa.Column('tags', types.MediumText(), nullable=False),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.Column('deleted', sa.Boolean(), nullable=False),
        sa.Column('deleted_at', types.DateTime(), nullable=True))
    op.create_index('images_owner_idx', 'images', ['owner'])
    op.create_index('images_visibility_idx', 'images', ['visibility'])
    op.create_index('images_created_at_idx', 'images', ['created_at'])


def downgrade():
    op.drop_table('images')

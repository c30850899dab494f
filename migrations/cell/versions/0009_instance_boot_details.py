"""instances: user data, kernel, ramdisk and root device of a server

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

What Nova keeps of a server's boot beside its image: the user data it was
given at its create or its last rebuild (2.57), the kernel and ramdisk
images its image names (``kernel_id``, ``ramdisk_id`` properties) and
the device its root disk is on. The compute API shows them to admins
from 2.3. All nullable: rows of the release before read as having none.
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('instances') as batch_op:
        batch_op.add_column(sa.Column('user_data', types.MediumText(),
                                      nullable=True))
        batch_op.add_column(sa.Column('kernel_id', sa.String(255),
                                      nullable=True))
        batch_op.add_column(sa.Column('ramdisk_id', sa.String(255),
                                      nullable=True))
        batch_op.add_column(sa.Column('root_device_name', sa.String(255),
                                      nullable=True))

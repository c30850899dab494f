"""build plans: what an unfinished build goes on with when a message or
a compute is lost

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27

One row per build handed to a compute of the cell: the host it was cast
to, the same-cell alternates not tried yet, the attempts so far and the
request spec. The cell conductor casts a build again, or on to its next
alternate, from it; the row goes once the build is finished.
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
        'build_plans',
        sa.Column('id', sa.Integer(), primary_key=True, nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('host', sa.String(255), nullable=True),
        sa.Column('node', sa.String(255), nullable=True),
        sa.Column('request_spec', types.MediumText(), nullable=False),
        sa.Column('alternates', types.MediumText(), nullable=False),
        sa.Column('retry', sa.Text(), nullable=False),
        sa.Column('recasts', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True))
    with op.batch_alter_table('build_plans') as batch_op:
        batch_op.create_index('build_plans_instance_uuid_idx',
                              ['instance_uuid'], unique=True)

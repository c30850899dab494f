"""consumers written through the Placement API

A consumer whose allocations were written through the Placement API
(Neutron's port, Ironic's node, an operator's reservation) is recorded
with its project, user, type and generation, which every write of its
allocations names and bumps. A server's or a move's allocations, which
the scheduler's claims write, have no record here: their owner is in
the API's and the cells' databases.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'consumers',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('consumer_type', sa.String(255), nullable=True),
        sa.Column('generation', sa.Integer, nullable=False,
                  server_default='0'),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_consumers0uuid'))
    op.create_index('consumers_project_id_user_id_idx', 'consumers',
                    ['project_id', 'user_id'])


def downgrade():
    op.drop_index('consumers_project_id_user_id_idx', table_name='consumers')
    op.drop_table('consumers')

"""build requests record who took them and how often they were re-driven

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('build_requests') as batch:
        batch.add_column(sa.Column('taken_at', types.DateTime(),
                                   nullable=True))
        batch.add_column(sa.Column('redrives', sa.Integer(), nullable=False,
                                   server_default='0'))

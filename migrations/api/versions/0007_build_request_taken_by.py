"""build requests record which super-conductor took them

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27

``taken_by`` is the host of the super-conductor that took a build request
to place it. One that restarts finds the boots it had taken before it
started, whose placement died with its previous run, and places them
again.
"""

from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('build_requests') as batch:
        batch.add_column(sa.Column('taken_by', sa.String(255),
                                   nullable=True))

"""which projects may use a private flavor

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'flavor_projects',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('flavor_id', sa.Integer(),
                  sa.ForeignKey('flavors.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('created_at', types.DateTime(), nullable=False),
        sa.Column('updated_at', types.DateTime(), nullable=True),
        sa.UniqueConstraint('flavor_id', 'project_id'))


def downgrade():
    op.drop_table('flavor_projects')

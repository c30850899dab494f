"""instances: who locked a server and why; instance_tags: a server's tags

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22

``locked``, ``locked_by`` (``owner`` or ``admin``) and ``locked_reason``
of the compute API's lock action (2.9, 2.73), and the ``instance_tags``
table of its tags (2.26), as Nova stores them. ``locked`` has a server
default, so rows inserted by services of the release before read as
unlocked while a rolling upgrade runs.
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('instances') as batch_op:
        batch_op.add_column(sa.Column('locked', sa.Boolean(),
                                      nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('locked_by', sa.String(255),
                                      nullable=True))
        batch_op.add_column(sa.Column('locked_reason', sa.String(255),
                                      nullable=True))
    op.create_table(
        'instance_tags',
        sa.Column('resource_id', sa.String(36), primary_key=True,
                  nullable=False),
        sa.Column('tag', sa.String(80), primary_key=True, nullable=False),
        sa.Index('instance_tags_tag_idx', 'tag'),
    )

"""Builders and readers shared by the unit tests."""

import atexit
import datetime
import os
import shutil
import tempfile

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import migration
from scheduler_split.db import scheduler_models
from scheduler_split import objects

objects.register_all()

# {kind: the file of a SQLite database of that kind at head}, migrated
# once per test session.
_TEMPLATES = {}


def database_at_head(kind, path):
    """URL of a SQLite database of ``kind`` (api, cell, scheduler) at
    head in the file ``path``: a copy of one migrated once per test
    session, as the alembic migrations would leave it."""
    template = _TEMPLATES.get(kind)
    if template is None:
        directory = tempfile.mkdtemp(prefix='scheduler-split-schema-')
        atexit.register(shutil.rmtree, directory, True)
        template = os.path.join(directory, kind + '.sqlite')
        url = 'sqlite:///' + template
        migration.upgrade(kind, url)
        # Closed, so that nothing of it waits in a write-ahead log.
        engines.get_engine(url, writer=False).dispose()
        _TEMPLATES[kind] = template
    shutil.copyfile(template, str(path))
    return 'sqlite:///' + str(path)


def naive_utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def make_flavor(vcpus=1, memory_mb=512, root_gb=1, ephemeral_gb=0, swap=0,
                flavorid='f1', name='small'):
    return objects.Flavor(flavorid=flavorid, name=name, memory_mb=memory_mb,
                          vcpus=vcpus, root_gb=root_gb,
                          ephemeral_gb=ephemeral_gb, swap=swap)


def make_spec(instance_uuid='9a3c4f52-6b1e-4a47-8a8e-2e0e5b1d7c11',
              **flavor_kwargs):
    return objects.RequestSpec(instance_uuid=instance_uuid,
                               project_id='project',
                               flavor=make_flavor(**flavor_kwargs))


def host_stats(vcpus=4, memory_mb=4096, local_gb=100, **extra):
    stats = {'vcpus': vcpus, 'memory_mb': memory_mb, 'local_gb': local_gb,
             'reserved_memory_mb': 0, 'cpu_allocation_ratio': 1.0,
             'ram_allocation_ratio': 1.0, 'disk_allocation_ratio': 1.0,
             'availability_zone': 'nova', 'disabled': False}
    stats.update(extra)
    return stats


def provider_usage(url, provider_uuid):
    """{rc: sum of used} on the provider, read straight from the table."""
    rp, alloc = scheduler_models.ResourceProvider, scheduler_models.Allocation
    with engines.reader(url) as session:
        return dict(session.execute(
            sa.select(alloc.resource_class, sa.func.sum(alloc.used))
            .join(rp, rp.id == alloc.resource_provider_id)
            .where(rp.uuid == provider_uuid)
            .group_by(alloc.resource_class)).all())

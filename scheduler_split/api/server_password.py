"""``/servers/{server_id}/os-server-password``: the password a Windows
guest's users log in with, encrypted for the server's key pair.

In Nova the guest makes that password: cloudbase-init, the init of
Windows images, sets the Administrator's password and posts it to the
metadata service encrypted with the public key of the server's key pair
(RSA, PKCS#1 v1.5, base64), and only when the server has such a key;
the metadata service keeps it in the server's system metadata, and
``nova get-password SERVER PRIVATE_KEY`` decrypts it. No guest runs here
and there is no metadata service: the one password a server has is the
``adminPass`` of its create or its last rebuild. So that is what is kept,
encrypted as cloudbase-init encrypts it, under ``password`` in the
server's system metadata, for a server whose image asks for one: an
image whose ``os_type`` is ``windows`` (the Glance property of Windows
images, the guests cloudbase-init runs on), booted with a key pair whose
public key is RSA. Any other server's password is empty, as it is in
Nova when no guest posted one. Clearing it forgets the encrypted copy;
the guest's password does not change.
"""

import base64
import logging

from cryptography import exceptions as crypto_exceptions
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives import serialization

from scheduler_split.api import errors
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import policy

LOG = logging.getLogger(__name__)

# The key of the server's system metadata that holds the password.
KEY = 'password'
# What Nova's metadata service keeps at most of a posted password.
MAX_LENGTH = 4 * 255


def asks_for_password(image_properties):
    """Whether a server of an image with ``image_properties`` has a
    password its users read here: a Windows image."""
    return str(image_properties.get('os_type', '')).lower() == 'windows'


def encrypt(public_key, password):
    """``password`` encrypted for the OpenSSH ``public_key`` as
    cloudbase-init encrypts it (RSA PKCS#1 v1.5, base64); None when the
    key cannot encrypt (not RSA, not an SSH key) or the password does not
    fit in one block of it."""
    try:
        key = serialization.load_ssh_public_key(public_key.strip().encode())
        if not isinstance(key, rsa.RSAPublicKey):
            return None
        encrypted = key.encrypt(password.encode(), padding.PKCS1v15())
    except (ValueError, crypto_exceptions.UnsupportedAlgorithm) as exc:
        LOG.info('No server password kept: the key pair cannot encrypt '
                 'it (%s)', exc)
        return None
    text = base64.b64encode(encrypted).decode()
    return text if len(text) <= MAX_LENGTH else None


def system_metadata(ctx, user_id, image_properties, key_name, admin_pass,
                    current=None):
    """The system metadata a server booted or rebuilt with ``admin_pass``
    from an image of ``image_properties`` and the key pair ``key_name``
    of ``user_id`` keeps: ``current`` with the encrypted password when
    the image asks for one and the key can encrypt it, without any
    password otherwise (an old one no longer opens a rebuilt guest)."""
    values = dict(current or {})
    values.pop(KEY, None)
    if not key_name or not asks_for_password(image_properties):
        return values
    try:
        keypair = objects.KeyPair.get_by_name(ctx, user_id, key_name)
    except exception.KeypairNotFound:
        return values
    encrypted = encrypt(keypair.public_key, admin_pass)
    if encrypted is not None:
        values[KEY] = encrypted
    return values


def _server(req, ctx, server_id, rule):
    try:
        instance = req.compute_api.get(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    policy.authorize(ctx, rule, {'project_id': instance.project_id})
    return instance


def index(req, ctx, version, server_id):
    instance = _server(req, ctx, server_id,
                       'os_compute_api:os-server-password:show')
    return {'password': (instance.get('system_metadata') or {}).get(KEY,
                                                                    '')}


def clear(req, ctx, version, server_id):
    """Forget the password, written only if the server's vm and task
    states are still those read (a shelve that starts meanwhile writes
    its own system metadata: the clear reads it again). 409 while the
    server is still being scheduled: what its build request holds is not
    what its cell will hold (only a user's edits of its name,
    description, addresses and lock go there)."""
    _server(req, ctx, server_id, 'os_compute_api:os-server-password:clear')
    for _ in range(10):
        try:
            instance, cell = req.compute_api.locate(ctx, server_id)
        except exception.InstanceNotFound as exc:
            raise errors.not_found(exc.format_message())
        values = dict(instance.get('system_metadata') or {})
        if values.pop(KEY, None) is None:
            return 204, None
        if cell is None:
            raise exception.InstanceNotReady(instance_id=server_id)
        instance.system_metadata = values
        try:
            instance.save(ss_context.target_cell(ctx, cell),
                          expected_task_state=instance.task_state,
                          expected_vm_state=instance.vm_state)
        except exception.InstanceNotFound as exc:
            raise errors.not_found(exc.format_message())
        except exception.Conflict:
            continue
        return 204, None
    raise exception.Conflict(
        reason='server %s keeps changing state; try again' % server_id)

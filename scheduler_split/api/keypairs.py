"""``/os-keypairs``: SSH key pairs, kept per user in the API database.

A key pair is generated here (RSA 2048, until 2.91; its private key is
answered once and never stored) or imported from a public key: an SSH
key, or from 2.2 (``type`` ``x509``) a PEM certificate, generated as a
self-signed certificate when none is given. Each user
may hold ``[quota] key_pairs`` of them, counted in the same turn as the
insert (see ``scheduler_split.quota``).
"""

import base64
import datetime
import hashlib
import re

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import NameOID

from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split import objects
from scheduler_split import policy

_NAME = re.compile(r'^(?! )[a-zA-Z0-9. _-]+(?<! )$')
# From 2.92 names may also hold '@'.
_NAME_292 = re.compile(r'^(?! )[a-zA-Z0-9. _@-]+(?<! )$')

CREATE = {
    'type': 'object',
    'properties': {'keypair': {
        'type': 'object',
        'properties': {
            'name': {'type': 'string', 'minLength': 1, 'maxLength': 255},
            'public_key': {'type': 'string'},
            'type': {'type': 'string', 'enum': ['ssh', 'x509']},
            'user_id': {'type': 'string', 'minLength': 1,
                        'maxLength': 255},
        },
        'required': ['name'], 'additionalProperties': False}},
    'required': ['keypair'], 'additionalProperties': False}


def _invalid(reason):
    return errors.bad_request('Keypair data is invalid: %s' % reason)


def _time(value):
    return value.strftime('%Y-%m-%dT%H:%M:%S.%f') if value else None


def fingerprint(public_key):
    """The MD5 fingerprint of an OpenSSH public key, as ssh-keygen -l -E
    md5 (and Nova) print it; 400 for a key that is not one."""
    try:
        serialization.load_ssh_public_key(public_key.strip().encode())
        blob = base64.b64decode(public_key.split()[1])
    except Exception:
        raise _invalid('failed to generate fingerprint')
    digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ':'.join(digest[i:i + 2] for i in range(0, len(digest), 2))


def x509_fingerprint(certificate):
    """The SHA-1 fingerprint of a PEM certificate, as Nova prints it; 400
    for anything else."""
    try:
        cert = x509.load_pem_x509_certificate(certificate.encode())
    except Exception:
        raise _invalid('failed to generate fingerprint')
    digest = cert.fingerprint(hashes.SHA1()).hex()
    return ':'.join(digest[i:i + 2] for i in range(0, len(digest), 2))


def _private_pem(key):
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode()


def _generate():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    return _private_pem(key), public + ' Generated-by-Nova'


def _generate_x509(user_id, project_id):
    """A private key and a self-signed certificate for it, valid ten
    years, naming the user and project (2.2's ``x509`` key pairs)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, (project_id or
                                                       'none')[:64]),
        x509.NameAttribute(NameOID.COMMON_NAME, (user_id or 'none')[:64])])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256()))
    return _private_pem(key), cert.public_bytes(
        serialization.Encoding.PEM).decode()


def _user(req, ctx, version, rule):
    """The user acted for: the caller, or (admins, from 2.10) the
    ``user_id`` asked for."""
    user_id = ctx.user_id
    if version >= (2, 10) and req.GET.get('user_id'):
        user_id = req.GET['user_id']
    policy.authorize(ctx, rule, {'user_id': user_id})
    return user_id


def _render(keypair, version, detail=False):
    body = {'name': keypair.name, 'public_key': keypair.public_key,
            'fingerprint': keypair.fingerprint}
    if version >= (2, 2):
        body['type'] = keypair.type
    if detail:
        body.update({'user_id': keypair.user_id, 'id': keypair.id,
                     'created_at': _time(keypair.created_at),
                     'updated_at': _time(keypair.updated_at),
                     'deleted': False, 'deleted_at': None})
    return body


def check_key_name(ctx, key_name):
    """At boot: ``key_name`` must be one of the caller's key pairs."""
    if key_name is None:
        return
    if not objects.KeyPair.exists(ctx, ctx.user_id, key_name):
        raise errors.bad_request('Invalid key_name provided.')


def create(req, ctx, version):
    body = req.json_body_or_error()
    schemas.validate(body, CREATE)
    values = body['keypair']
    user_id = ctx.user_id
    if version >= (2, 10) and values.get('user_id'):
        user_id = values['user_id']
    policy.authorize(ctx, 'os_compute_api:os-keypairs:create',
                     {'user_id': user_id})
    name = values['name']
    if not (_NAME_292 if version >= (2, 92) else _NAME).match(name):
        raise _invalid('The keypair name contains unsafe characters')
    key_type = values.get('type', 'ssh') if version >= (2, 2) else 'ssh'
    private_key = None
    public_key = values.get('public_key')
    if public_key is None:
        if version >= (2, 92):
            raise errors.bad_request(
                "Invalid input for field/attribute keypair. Value: %s. "
                "'public_key' is a required property" % values)
        if key_type == 'x509':
            private_key, public_key = _generate_x509(user_id,
                                                     ctx.project_id)
        else:
            private_key, public_key = _generate()
    print_ = (x509_fingerprint if key_type == 'x509' else
              fingerprint)(public_key)
    keypair = objects.KeyPair(name=name, user_id=user_id,
                              public_key=public_key, fingerprint=print_,
                              type=key_type)
    keypair.create(ctx, ctx.project_id)
    answer = _render(keypair, version)
    answer['user_id'] = user_id
    if private_key is not None:
        answer['private_key'] = private_key
    return (201 if version >= (2, 2) else 200), {'keypair': answer}


def index(req, ctx, version):
    user_id = _user(req, ctx, version, 'os_compute_api:os-keypairs:index')
    limit = marker = None
    if version >= (2, 35):
        marker = req.GET.get('marker')
        if 'limit' in req.GET:
            try:
                limit = int(req.GET['limit'])
                if limit < 0:
                    raise ValueError()
            except ValueError:
                raise errors.bad_request('Invalid input for query '
                                         'parameter limit')
    found = objects.KeyPair.get_all(ctx, user_id, limit=limit,
                                    marker=marker)
    body = {'keypairs': [{'keypair': _render(keypair, version)}
                         for keypair in found]}
    if limit is not None and found and len(found) == limit:
        body['keypairs_links'] = [{
            'rel': 'next',
            'href': '%s/v2.1/os-keypairs?limit=%d&marker=%s'
                    % (req.application_url, limit, found[-1].name)}]
    return body


def show(req, ctx, version, name):
    user_id = _user(req, ctx, version, 'os_compute_api:os-keypairs:show')
    keypair = objects.KeyPair.get_by_name(ctx, user_id, name)
    return {'keypair': _render(keypair, version, detail=True)}


def delete(req, ctx, version, name):
    user_id = _user(req, ctx, version, 'os_compute_api:os-keypairs:delete')
    objects.KeyPair.destroy(ctx, user_id, name)
    return (204 if version >= (2, 2) else 202), None

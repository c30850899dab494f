"""Admin passwords the API makes up for a server, as Nova's
``enable_instance_password`` does: random, from letters and digits a
reader does not confuse (no 0/O, 1/l/I)."""

import secrets

_ALPHABET = ('abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ'
             '23456789')
LENGTH = 12


def generate(length=LENGTH):
    """A new random password of ``length`` characters."""
    return ''.join(secrets.choice(_ALPHABET) for _ in range(length))

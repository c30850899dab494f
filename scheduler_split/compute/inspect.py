"""What a compute tells of a server it runs (compute RPC 1.6 calls): its
console output and its diagnostics, from the driver. Nothing is written.
"""

import oslo_messaging as messaging

from scheduler_split import exception


class InspectMixin:
    """The read-only calls of :class:`ComputeManager`."""

    @messaging.expose
    @messaging.expected_exceptions(exception.InstanceNotFound)
    def get_console_output(self, ctx, instance, tail_length=None):
        """The server's console, its last ``tail_length`` lines if set."""
        output = self.driver.get_console_output(instance)
        if tail_length is None:
            return output
        if not tail_length:
            return ''
        # As Nova's compute tails it: the last pieces between newlines,
        # the empty one after a final newline counting as one.
        return '\n'.join(output.split('\n')[-tail_length:])

    @messaging.expose
    @messaging.expected_exceptions(exception.InstanceNotFound)
    def get_diagnostics(self, ctx, instance):
        """The server's diagnostics, as Nova shows them from 2.48."""
        return self.driver.get_diagnostics(instance)

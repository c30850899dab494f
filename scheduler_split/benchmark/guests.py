"""``scheduler-split-bench --guests``: real guests booted at once.

It starts ``scheduler-split-all-in-one --compute-driver libvirt`` as a
child process (the control plane: every service, and the ``qemu-img``
it runs), posts ``--servers`` boots of the test guest at once, and times
each from its POST to ACTIVE (the end of its build, read afterwards from
its instance action, so that no polling of the API costs the control
plane CPU) and to the guest's own marker line on its serial console
(read from the console log file on this machine). The CPU the control
plane spent per boot is set beside the CPU each guest's QEMU spent to
reach its marker. It needs root, libvirtd running and the libvirt extra.
"""

import concurrent.futures
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from scheduler_split.benchmark import api_client
from scheduler_split.benchmark import base
from scheduler_split.benchmark import cpu
from scheduler_split.benchmark import stats
from scheduler_split.image import guest

IMAGE = 'scheduler-split-guest'
_BOOTED = re.compile(r'^%s booted ' % guest.MARKER, re.M)


def _qemu_of(uuid):
    """The pid of the QEMU running the guest of server ``uuid``."""
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                args = f.read().split(b'\0')
        except OSError:
            continue
        if b'-uuid' in args and uuid.encode() in args:
            return int(pid)
    return None


def _utc(text):
    return datetime.datetime.fromisoformat(
        text.replace('Z', '+00:00')).replace(
            tzinfo=datetime.timezone.utc).timestamp() if text else None


class GuestBenchmark:

    def __init__(self, servers, flavor, timeout, progress, config_files=(),
                 keep_dir=None):
        self.servers = servers
        self.flavor = flavor
        self.timeout = timeout
        self.progress = progress
        self.config_files = list(config_files)
        self.base = tempfile.mkdtemp(prefix='scheduler-split-bench-guests-',
                                     dir='/var/tmp')
        # QEMU's own user enters the instances' directories.
        os.chmod(self.base, 0o755)
        self.keep_dir = keep_dir
        self.proc = None

    def _start(self):
        instances = os.path.join(self.base, 'instances')
        config = os.path.join(self.base, 'bench.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\ninstances_path = %s\n'
                    # Idle guests: enough vCPUs for all of them.
                    '[compute]\ncpu_allocation_ratio = %d\n'
                    % (instances, max(16, self.servers)))
        self.instances = instances
        command = [sys.executable, '-m', 'scheduler_split.cmd.all_in_one',
                   '--compute-driver', 'libvirt', '--port', '0',
                   '--state-dir', os.path.join(self.base, 'state'),
                   '--config-file', config]
        for path in self.config_files:
            command += ['--config-file', path]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            found = re.search(r'compute API (http://\S+)/v2\.1', line)
            if found:
                self.endpoint = found.group(1) + '/v2.1'
            if line.startswith('export OS_CLIENT_CONFIG_FILE'):
                return
        raise base.BenchError('the all-in-one stopped before serving:\n%s'
                              % ''.join(lines))

    def _stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _find(self, client, path, key, name, absolute=False):
        answer = client.request('GET', path, absolute=absolute)
        for item in (answer.body or {}).get(key, []):
            if item['name'] == name:
                return item['id']
        raise base.BenchError('no %s named %s' % (key[:-1], name))

    def _console_log(self, uuid):
        for host in os.listdir(self.instances):
            path = os.path.join(self.instances, host, uuid, 'console.log')
            if os.path.exists(path):
                return path
        return None

    def run(self):
        try:
            self.progress.show('starting the all-in-one with libvirt')
            self._start()
            return self._measure()
        finally:
            self._stop()
            if self.keep_dir is None:
                shutil.rmtree(self.base, ignore_errors=True)

    def _measure(self):
        client = api_client.ComputeClient(self.endpoint, 'admin:admin',
                                          'admin')
        image = self._find(client, '/image/v2/images?name=' + IMAGE,
                           'images', IMAGE, absolute=True)
        flavor = self._find(client, '/flavors', 'flavors', self.flavor)
        control0 = cpu.seconds(self.proc.pid)

        def post(index):
            mine = api_client.ComputeClient(self.endpoint, 'admin:admin',
                                            'admin')
            posted = time.time()
            answer = mine.request('POST', '/servers', {'server': {
                'name': 'guest-%d' % index, 'imageRef': image,
                'flavorRef': flavor, 'networks': 'none'}})
            mine.close()
            if answer.status != 202:
                raise base.BenchError('POST /servers: %s %s' % (
                    answer.status, answer.body))
            return answer.body['server']['id'], posted

        with concurrent.futures.ThreadPoolExecutor(self.servers) as pool:
            posted = dict(pool.map(post, range(self.servers)))
        marker = {}
        deadline = time.monotonic() + self.timeout
        while len(marker) < len(posted):
            if time.monotonic() > deadline:
                raise base.BenchError('%d of %d guests showed no marker '
                                      'within %ss' % (
                                          len(posted) - len(marker),
                                          len(posted), self.timeout))
            for uuid in posted:
                if uuid in marker:
                    continue
                path = self._console_log(uuid)
                if path is None:
                    continue
                with open(path, 'rb') as f:
                    text = f.read().decode('utf-8', 'replace')
                if _BOOTED.search(text):
                    marker[uuid] = time.time()
            self.progress.show('%d of %d guests booted' % (len(marker),
                                                           len(posted)))
            time.sleep(0.1)
        control = cpu.seconds(self.proc.pid) - control0
        guest_cpu = [cpu.seconds(_qemu_of(uuid)) for uuid in posted]
        active = {}
        for uuid in posted:
            answer = client.request('GET', '/servers/%s/os-instance-actions'
                                    % uuid)
            create = [a for a in answer.body['instanceActions']
                      if a['action'] == 'create'][0]
            detail = client.request('GET', '/servers/%s/os-instance-actions'
                                    '/%s' % (uuid, create['request_id']))
            ends = [_utc(e.get('finish_time')) for e in
                    detail.body['instanceAction'].get('events', [])
                    if e.get('result') == 'Success' and
                    e['event'] == 'compute_build_and_run_instance']
            if ends:
                active[uuid] = ends[-1]
        for uuid in posted:
            client.request('DELETE', '/servers/%s' % uuid)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
                client.request('GET', '/servers/%s' % u).status != 404
                for u in posted):
            time.sleep(0.5)
        client.close()
        self.progress.done('%d guests booted and deleted' % len(posted))
        to_marker = [marker[u] - posted[u] for u in posted]
        to_active = [active[u] - posted[u] for u in active]
        return {
            'mode': 'guests', 'servers': self.servers,
            'flavor': self.flavor, 'image': IMAGE,
            'to_active_s': stats.rounded(stats.percentiles(to_active), 2),
            'to_marker_s': stats.rounded(stats.percentiles(to_marker), 2),
            'control_plane_cpu_s_per_boot': round(
                control / self.servers, 3),
            'guest_cpu_s_per_boot': stats.rounded(
                stats.percentiles(guest_cpu), 2),
            'wall_s': round(max(marker.values()) - min(posted.values()),
                            2)}


def format_report(report):
    """The report of a guests run, as lines of text."""
    lines = ['%d guests (%s, image %s) booted at once in %.1f s'
             % (report['servers'], report['flavor'], report['image'],
                report['wall_s']),
             '%-34s %8s %8s %8s' % ('', 'p50', 'p95', 'p99')]
    for key, label in (('to_active_s', 'POST -> ACTIVE (s)'),
                       ('to_marker_s', 'POST -> guest marker line (s)'),
                       ('guest_cpu_s_per_boot',
                        'guest QEMU CPU to marker (s)')):
        row = report[key]
        lines.append('%-34s %8s %8s %8s' % (label, row['p50'], row['p95'],
                                            row['p99']))
    lines.append('control plane CPU per boot: %.3f s (every service of '
                 'the all-in-one, qemu-img included)'
                 % report['control_plane_cpu_s_per_boot'])
    return '\n'.join(lines)

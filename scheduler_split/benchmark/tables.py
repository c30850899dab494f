"""The reports of the runs as tables, as ``scheduler-split-bench``
prints them without ``--json``."""

import textwrap

from scheduler_split.benchmark import db_stats
from scheduler_split.benchmark import server_list


def _figures(values, keys, fmt):
    """``values[key]`` of each of ``keys``, ten characters each: the
    figures of a row of a table."""
    return ''.join(fmt % values[key] if values[key] is not None
                   else '%10s' % 'n/a' for key in keys)


def _booted(report):
    """The lines of a report that say where the boots came to rest."""
    return [
        '  posted          %8d   (failed POSTs: %d)'
        % (report['posted'], report['failed_posts']),
        '  ACTIVE          %8d' % report['active'],
        '  ERROR           %8d' % report['error'],
        '  still BUILD     %8d%s' % (report['still_building'],
                                     '   (timed out)' if report['timed_out']
                                     else ''),
    ]


def _boot_rate(report):
    if report['boots_per_s'] is None:
        return '  boots/s              n/a   (no server ACTIVE)'
    until = ('the processes quiet' if report.get('cpu') else 'last ACTIVE')
    return ('  boots/s         %8.2f   (%d ACTIVE in %.2f s, first POST to '
            '%s)' % (report['boots_per_s'], report['active'],
                     report['duration_s'], until))


def _with_total(rows):
    """``rows`` (a header first, a total last; cells as strings) as
    lines: names to the left, figures to the right, a rule above the
    total."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        if index == len(rows) - 1:
            lines.append('  ' + '-' * (sum(widths) + 3 * (len(widths) - 1)))
        lines.append('  ' + '   '.join(
            [row[0].ljust(widths[0])] +
            [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]))
    return lines


def _cpu(report):
    """The CPU each kind of process spent on the boots, a row each."""
    measured = report['cpu']
    header = ('', 'processes', 'CPU s', 'CPU ms/boot', 'idle CPU ms/s')
    rows = [header]
    for name, figures in list(measured['by_name'].items()) + [
            ('total', measured['total'])]:
        rows.append((
            name, str(figures['processes']), '%.2f' % figures['cpu_s'],
            ('%.1f' % figures['cpu_ms_per_boot']
             if figures['cpu_ms_per_boot'] is not None else 'n/a'),
            '%.1f' % figures['idle_cpu_ms_per_s']))
    lines = ['', '  CPU in the window of %.2f s:' % measured['window_s'],
             ''] + _with_total(rows)
    lines += [''] + _paragraph(
        'The window runs from the first POST to when the processes went '
        'quiet (all of them together below their idle rate plus %.1f core '
        'over %.0f s) after the last server came to rest. The bench\'s '
        'looks at the servers inside it (%d, %.2f CPU s) are subtracted; '
        'its reads of the instance actions and its deletes come after it. '
        'The figures are gross: the background the processes have when '
        'idle is in them (idle CPU ms/s, measured over %.1f s before the '
        'first POST).'
        % (measured['quiet_margin_cores'], measured['quiet_span_s'],
           measured['looks_in_window'], measured['looks_cpu_s'],
           measured['idle_measured_s']))
    if measured['vanished']:
        lines += [''] + _paragraph(
            'Gone during the run, counted until their last reading: %s.'
            % ', '.join('%s (pid %s)' % (name, pid) for pid, name
                        in measured['vanished'].items()))
    return lines


def _database(report):
    """What the boots sent the database server, per boot: statements
    and transactions, by database, and the statements sent most."""
    counted = report['database']
    total = counted['total']
    header = ('', 'statements/boot', 'transactions/boot', 'idle stmt/s')
    rows = [header]
    names = sorted(set(counted['statements_by_database'] or {}) |
                   set(counted['transactions_by_database'] or {}))

    def cell(part, name, key, fmt='%.1f'):
        row = (part or {}).get(name) if name else part
        if row is None or row[key] is None:
            return 'n/a'
        return fmt % row[key]

    for name in names:
        rows.append((name,
                     cell(counted['statements_by_database'], name,
                          'per_boot'),
                     cell(counted['transactions_by_database'], name,
                          'per_boot'),
                     cell(counted['statements_by_database'], name,
                          'idle_per_s')))
    rows.append(('total', cell(total['statements'], None, 'per_boot'),
                 cell(total['transactions'], None, 'per_boot'),
                 cell(total['statements'], None, 'idle_per_s')))
    lines = ['', '  The database server in the same window:',
             ''] + _with_total(rows)
    if counted['top_statements']:
        lines += ['', '  sent most (calls per boot, database, statement):']
        for top in counted['top_statements'][:db_stats.TOP]:
            lines += textwrap.wrap(
                '%s  %s' % (top['database'], top['statement']), width=76,
                initial_indent='  %7.2f  ' % top['per_boot']
                if top['per_boot'] is not None else '  %7s  ' % 'n/a',
                subsequent_indent=' ' * 11, max_lines=2)
    lines += [''] + _paragraph('Counted from %s; the bench\'s looks at the '
                               'servers inside the window are subtracted.'
                               % counted['what'])
    return lines


def _paragraph(text):
    return textwrap.wrap(text, width=76, initial_indent='  ',
                         subsequent_indent='  ')


def _boot_failures(report):
    """The faults of the servers in ERROR and the answers of the failed
    POSTs, counted."""
    lines = []
    for title, key in (('ERROR reasons', 'error_reasons'),
                       ('failed POSTs', 'failed_post_reasons')):
        if report[key]:
            lines += ['', '  %s:' % title]
            lines += ['  %6d  %s' % (count, reason)
                      for reason, count in report[key].items()]
    return lines


def format_boot(report):
    """The report of a boot run as a table."""
    where = (report['endpoint'] if report['endpoint'] else
             'an all-in-one of %d hosts in %d cells'
             % (report['hosts'], report['cells']))
    lines = [
        'Boot: %d servers of %s (%s), %d client thread%s, against %s'
        % (report['servers'], report['flavor'], report['image'],
           report['concurrency'], 's' if report['concurrency'] > 1 else '',
           where),
        '',
    ] + _booted(report) + [
        '  reschedules     %8d   (servers rescheduled: %d)'
        % (report['reschedules'], report['rescheduled_servers']),
        _boot_rate(report),
    ]
    points = ('p50', 'p95', 'p99')
    lines += ['', '  %-16s%10s%10s%10s' % (('',) + points)]
    for label, key, fmt in (('POST latency ms', 'post_latency_ms', '%10.1f'),
                            ('time to ACTIVE s', 'time_to_active_s',
                             '%10.3f')):
        if report[key] is None:
            lines += textwrap.wrap(
                report.get('time_to_active_not_measured', 'not measured'),
                width=76, initial_indent='  %-18s' % label,
                subsequent_indent=' ' * 20)
        else:
            lines.append('  %-16s' % label + _figures(report[key], points,
                                                      fmt))
    if report.get('cpu'):
        lines += _cpu(report)
    if report.get('database'):
        lines += _database(report)
    lines += _boot_failures(report)
    if report['failed_polls']:
        lines += ['', '  (%d looks at the server list failed and were '
                      'made again)' % report['failed_polls']]
    if report['servers_without_actions_read']:
        lines += ['', '  (the actions of %d servers could not be read: '
                      'their reschedules are not counted)'
                  % report['servers_without_actions_read']]
    return '\n'.join(lines)


def format_list_servers(report):
    """The report of a server list run as a table, a row per kind of
    request."""
    cells = ', '.join('%s %d' % item
                      for item in report['servers_per_cell'].items())
    lines = [
        'List servers: %d servers of %s (%s) in an all-in-one of %d hosts '
        'in %d cells, booted by %d client thread%s; %d a page, each asked '
        'for %d times'
        % (report['servers'], report['flavor'], report['image'],
           report['hosts'], report['cells'], report['concurrency'],
           's' if report['concurrency'] > 1 else '', report['limit'],
           report['repeats']),
        '',
    ] + _booted(report) + [
        _boot_rate(report),
        '  listed          %8d   (%s)' % (report['listed'], cells or 'none'),
        '',
        '  %-30s%8s' % ('', 'servers') + ''.join(
            '%10s' % ('%s ms' % key) for key in server_list.FIGURES),
    ]
    wrong = []
    for kind in report['requests'].values():
        lines.append('  %-30s%8d' % (kind['label'], kind['expected_length'])
                     + _figures(kind['ms'], server_list.FIGURES, '%10.2f'))
        if kind['lengths'] != [kind['expected_length']]:
            wrong.append('  %s: pages of %s servers, not %d' % (
                kind['label'], ', '.join(map(str, kind['lengths'])),
                kind['expected_length']))
    lines += ['', '  GET under the compute endpoint, one at a time:']
    lines += ['  %-30s%s' % (kind['label'], kind['path'])
              for kind in report['requests'].values()]
    if wrong:
        lines += ['', '  Pages of the wrong length:'] + wrong
    lines += _boot_failures(report)
    return '\n'.join(lines)


def _table(header, rows):
    """``rows`` (tuples of texts) under ``header``, right-aligned."""
    rows = [header] + rows
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return ['  ' + '  '.join(cell.rjust(width)
                             for cell, width in zip(r, widths))
            for r in rows]


def format_scheduler(report):
    """The report of a scheduler run as three tables, a row per size:
    reports, selects (alone and under a stream of reports), and the
    restart and memory."""
    def number(value, fmt):
        return fmt % value if value is not None else 'n/a'

    rows = report['rows']
    lines = ['Scheduler alone: %d cells, %d selects of one %s each '
             '(%d alternates), per size'
             % (report['cells'], report['selects'], report['flavor'],
                report['num_alternates']), '']
    lines += _table(
        ('hosts', 'first reports/s', 'lost', 'unchanged/s', 'lost',
         'changed/s', 'lost'),
        [(str(row['hosts']), number(row['reports_per_s'], '%.1f'),
          str(row['reports_lost']),
          number(row['unchanged_reports_per_s'], '%.1f'),
          str(row['unchanged_reports_lost']),
          number(row.get('changed_reports_per_s'), '%.1f'),
          str(row.get('changed_reports_lost', 'n/a'))) for row in rows])
    stream = [row.get('stream') or {} for row in rows]
    lines += ['']
    lines += _table(
        ('hosts', 'select p50 ms', 'p95 ms', 'p99 ms', '| stream sent/s',
         'absorbed/s', 'lost', 'p50 ms', 'p99 ms', 'selects', 'reload s'),
        [(str(row['hosts']), number(row['select_ms']['p50'], '%.2f'),
          number(row['select_ms']['p95'], '%.2f'),
          number(row['select_ms']['p99'], '%.2f'),
          number(under.get('sent_per_s'), '%.1f'),
          number(under.get('absorbed_per_s'), '%.1f'),
          str(under.get('lost', 'n/a')),
          number((under.get('select_ms') or {}).get('p50'), '%.2f'),
          number((under.get('select_ms') or {}).get('p99'), '%.2f'),
          str(under.get('selects', 'n/a')),
          number(under.get('reload_s'), '%.3f'))
         for row, under in zip(rows, stream)])
    lines += ['']
    lines += _table(
        ('hosts', 'restart: first select s', 'load s',
         'RSS KiB/host', 'untrimmed'),
        [(str(row['hosts']),
          number((row.get('restart') or {}).get('first_select_s'), '%.3f'),
          number((row.get('restart') or {}).get('loaded_s'), '%.3f'),
          number(row['rss_kib_per_host'], '%.2f'),
          number(row.get('rss_kib_per_host_untrimmed'), '%.2f'))
         for row in rows])
    for row in rows:
        if row.get('device_select_ms'):
            lines += ['', '  %d hosts, device selects (a VGPU of a GPU '
                      'below the compute node): p50 %s ms, p99 %s ms; the '
                      'others: p50 %s ms, p99 %s ms' % (
                          row['hosts'],
                          number(row['device_select_ms']['p50'], '%.2f'),
                          number(row['device_select_ms']['p99'], '%.2f'),
                          number(row['plain_select_ms']['p50'], '%.2f'),
                          number(row['plain_select_ms']['p99'], '%.2f'))]
    lines += ['', '  stream: %s changed reports a second sent from a '
              'process of its own for %s s while selects are timed, one '
              'every %s ms at most; host states reloaded every %s s'
              % (report.get('report_rate', 'n/a'),
                 report.get('stream_seconds', 'n/a'),
                 report.get('select_pause_ms', 'n/a'),
                 report.get('reload_interval', 'n/a')),
              '  reload s: the mean of the reloads during the stream; '
              'load s: the load of every host after the restart',
              '  RSS KiB/host: growth from before the first report to '
              'after the first select, once the memory freed since is '
              'back with the system; untrimmed: before that']
    failures = sum(row['select_failures'] +
                   (row.get('stream') or {}).get('select_failures', 0)
                   for row in rows)
    if failures:
        lines += ['', '  %d selects found no valid host' % failures]
    return '\n'.join(lines)

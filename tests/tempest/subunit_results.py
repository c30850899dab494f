"""Reads a subunit v2 stream on stdin, writes one JSON object per line:
``{"id": ..., "status": ..., "reason": ...}``.

Runs with the Tempest virtualenv's interpreter (python-subunit and
testtools come with Tempest; the project's venv does not need them).
``reason`` is the skip reason, or the traceback of a failure, shortened.
"""

import json
import sys

import subunit
import testtools


def main():
    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer,
                                              non_subunit_name='stdout')
    out = sys.stdout

    def on_test(test):
        if test['id'] == 'stdout' or test['status'] in (None, 'exists'):
            return
        reason = ''
        for name in ('reason', 'traceback'):
            detail = test['details'].get(name)
            if detail is not None:
                reason = ''.join(detail.iter_text())
                break
        out.write(json.dumps({'id': test['id'], 'status': test['status'],
                              'reason': reason[-4000:]}) + '\n')

    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        stream.run(result)
    finally:
        result.stopTestRun()


if __name__ == '__main__':
    main()

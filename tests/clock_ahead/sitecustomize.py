"""With this folder on PYTHONPATH, every Python process (pytest, its workers, the commands
the tests start, the helper process) sees the wall clock a year ahead: time.time,
datetime.now, date.today. Monotonic time, sleeps and waits stay real, so nothing hangs or
fails for the shift itself (libfaketime shifts them too, and Python's waits then hang or
fail with EINVAL). A test that passes today and fails here depends on today's date:

    PYTHONPATH=tests/clock_ahead pytest -n auto

File times stay the kernel's, not shifted: what compares a file's time with the clock
takes the clock from a file too (benchmarks/run.py's file_clock).
"""

import datetime as _dt

import time_machine as _tm

_tm.travel(_dt.datetime.now(_dt.UTC) + _dt.timedelta(days=365), tick=True).start()

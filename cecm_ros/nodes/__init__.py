"""The ROS 2 node graph of cecm_ros: one module per node, each a lifecycle node.

Nodes translate messages to core values (``conversions``), call the ROS-free core
(``cecm_ros.core``) and publish the answers; no algorithm lives here.
"""

import faulthandler as _faulthandler
import signal as _signal
import sys as _sys

# A node that stops answering (seen in CI: a process that never logged a line) can be
# asked where it is: ``kill -USR1 <pid>`` prints every thread's stack to its log, also
# when a thread holds the interpreter in C code. Registered on import, before any of the
# node's own imports could be the ones that hang.
if (hasattr(_signal, 'SIGUSR1') and _sys.stderr is not None
        and _signal.getsignal(_signal.SIGUSR1) in (_signal.SIG_DFL, None)):
    try:
        _faulthandler.register(_signal.SIGUSR1, all_threads=True, chain=False)
        # A process that dies of a fatal signal (a crash in the DDS middleware at start,
        # say) leaves its threads' stacks in its log too, instead of an empty log.
        if not _faulthandler.is_enabled():
            _faulthandler.enable(all_threads=True)
    except (RuntimeError, ValueError, OSError, AttributeError):  # no usable stderr
        pass

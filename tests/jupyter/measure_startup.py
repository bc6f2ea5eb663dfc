"""Measures how soon a fresh torchlet kernel answers kernel_info_request (spawn to reply), N times.

Usage: .venv-jupyter/bin/python tests/jupyter/measure_startup.py [PATH_TO_TORCHLET] [N]
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import zmq
from jupyter_client import BlockingKernelClient

# The client connects before the kernel binds; ZeroMQ retries refused connections every 100 ms by
# default, which would be measured instead of the kernel. Retry every 2 ms.
zmq.Context.instance().setsockopt(zmq.RECONNECT_IVL, 2)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def once(exe):
    shell, iopub, stdin, control, hb = free_ports(5)
    info = dict(shell_port=shell, iopub_port=iopub, stdin_port=stdin, control_port=control,
                hb_port=hb, ip="127.0.0.1", key="k", transport="tcp", signature_scheme="hmac-sha256")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "conn.json")
        with open(path, "w") as f:
            json.dump(info, f)
        client = BlockingKernelClient(connection_file=path, context=zmq.Context.instance())
        client.load_connection_file()
        client.start_channels()
        started = time.perf_counter()
        kernel = subprocess.Popen([exe, "kernel", "--connection-file", path],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # Sent before the kernel has bound: ZeroMQ delivers it once the socket exists.
            msg_id = client.kernel_info()
            while True:
                reply = client.get_shell_msg(timeout=10)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return time.perf_counter() - started
        finally:
            client.stop_channels()
            kernel.kill()
            kernel.wait()


if __name__ == "__main__":
    exe = sys.argv[1] if len(sys.argv) > 1 else "target/debug/torchlet"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    times = [once(exe) * 1000 for _ in range(n)]
    print(f"kernel_info_reply after spawn: median {statistics.median(times):.1f} ms, "
          f"max {max(times):.1f} ms over {n} starts ({exe})")

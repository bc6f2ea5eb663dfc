"""Protocol races of the torchlet kernel under jupyter_client, each repeated because a race passes by luck once.

- Run All with stop_on_error: every execute_request sent before a fast failure is aborted,
  however the requests are spread over the socket, and aborted replies carry no execution_count.
- Every output of a cell is sent on iopub before its execute_reply is sent on shell (by the kernel's dates).
- A kernel started and shut down by jupyter_client writes nothing to stderr.
- Re-running `let x = randn(1000, 1000).cuda()` leaves memory_allocated where it was.

Run through `cargo test --test front_ends kernel_jupyter::`; by hand:
`JUPYTER_PATH=DIR .venv-jupyter/bin/python -m unittest -v tests/jupyter/test_protocol.py`.
"""
import os
import re
import socket
import struct
import tempfile
import time
import unittest
from datetime import timezone
from queue import Empty

import zmq
from jupyter_client.manager import KernelManager, start_new_kernel

KERNEL = os.environ.get("TORCHLET_KERNEL_NAME", "torchlet")
SIM_KERNEL = os.environ.get("TORCHLET_SIM_KERNEL_NAME", "torchlet-sim")
ROUNDS = int(os.environ.get("TORCHLET_PROTOCOL_ROUNDS", "20"))
TIMEOUT = 15

OUTPUTS = {"stream", "display_data", "execute_result", "error", "clear_output", "update_display_data"}


class Recorder:
    """Reads shell and iopub from one thread, sorting replies and iopub messages by request.

    Two sockets have no common order on the way in: the client's I/O thread may hand over a
    reply well after outputs the kernel sent first, or before them (100 KB of stream text
    trailed its reply by more than 50 ms on a loaded 2-core machine). Whether the kernel sent
    outputs before the reply is read from the kernel's own clock instead, the header dates
    (see OutputsBeforeReply).
    """

    def __init__(self, kc):
        self.kc = kc
        self.replies = {}  # msg_id -> reply
        self.iopub = {}  # msg_id -> [msg], in iopub order

    def _take_iopub(self):
        while self.kc.iopub_channel.msg_ready():
            msg = self.kc.iopub_channel.get_msg(timeout=0)
            parent = msg["parent_header"].get("msg_id")
            self.iopub.setdefault(parent, []).append(msg)

    def _idle(self, msg_id):
        return any(
            m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
            for m in self.iopub.get(msg_id, [])
        )

    def wait(self, msg_ids, timeout=TIMEOUT):
        """Read until every request in `msg_ids` has its reply and its idle."""
        poller = zmq.Poller()
        poller.register(self.kc.shell_channel.socket, zmq.POLLIN)
        poller.register(self.kc.iopub_channel.socket, zmq.POLLIN)
        deadline = time.time() + timeout
        while not all(m in self.replies and self._idle(m) for m in msg_ids):
            left = deadline - time.time()
            if left <= 0:
                missing = [m for m in msg_ids if m not in self.replies or not self._idle(m)]
                raise AssertionError(f"no reply or idle within {timeout}s for {missing}")
            poller.poll(int(left * 1000))
            self._take_iopub()
            while self.kc.shell_channel.msg_ready():
                reply = self.kc.shell_channel.get_msg(timeout=0)
                self.replies[reply["parent_header"]["msg_id"]] = reply
        return {m: self.replies[m] for m in msg_ids}

    def published(self, msg_id):
        return self.iopub.get(msg_id, [])


def sent_at(msg):
    """A message's header date as a sortable (UTC second, nanoseconds) pair.

    The kernel writes nanoseconds, which jupyter_client leaves as a string, and chrono drops
    trailing zero digits, so the strings themselves do not sort.
    """
    date = msg["header"]["date"]
    if not isinstance(date, str):
        date = date.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(?:Z|\+00:00)", date)
    assert m, f"a header date not in UTC: {date!r}"
    return m[1], int((m[2] or "").ljust(9, "0"))


def execute_msg(kc, code, **options):
    content = dict(code=code, silent=False, store_history=True, user_expressions={},
                   allow_stdin=False, stop_on_error=True)
    content.update(options)
    return kc.session.msg("execute_request", content)


class KernelCase(unittest.TestCase):
    """One kernel for the class; its stderr goes to a file so tests can read it."""

    kernel = KERNEL

    @classmethod
    def setUpClass(cls):
        cls.stderr = tempfile.TemporaryFile()
        cls.km = KernelManager(kernel_name=cls.kernel)
        cls.km.start_kernel(stderr=cls.stderr)
        cls.kc = cls.km.client()
        cls.kc.start_channels()
        cls.kc.wait_for_ready(timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)
        cls.stderr.close()

    def setUp(self):
        for channel in (self.kc.shell_channel, self.kc.iopub_channel):
            while True:
                try:
                    channel.get_msg(timeout=0.05)
                except Empty:
                    break
        self.rec = Recorder(self.kc)

    def send_all(self, msgs, gaps=None):
        """Send `msgs` (already built, so every header date precedes the first send), sleeping
        `gaps[i]` seconds after the i-th."""
        for i, msg in enumerate(msgs):
            self.kc.shell_channel.send(msg)
            if gaps and gaps[i % len(gaps)]:
                time.sleep(gaps[i % len(gaps)])
        return [m["header"]["msg_id"] for m in msgs]

    def cell(self, code, **options):
        [msg_id] = self.send_all([execute_msg(self.kc, code, **options)])
        return self.rec.wait([msg_id])[msg_id], self.rec.published(msg_id)


class StopOnError(KernelCase):
    # How requests are spread over the socket after the failing one: back to back, the failing
    # one alone first, and with pauses (the requests were all made before the first was sent).
    GAPS = {"burst": None, "first-alone": [0.002, 0], "trickle": [0.0005], "pauses": [0, 0.003]}

    def test_run_all_aborts_every_cell_queued_behind_a_fast_failure(self):
        self.cell("let ran_after_error = 0;")
        for round in range(ROUNDS):
            for name, gaps in self.GAPS.items():
                with self.subTest(round=round, batching=name):
                    self.one_run_all(gaps, before=round % 3)

    def one_run_all(self, gaps, before):
        ok_cells = [execute_msg(self.kc, f"{i} + 1") for i in range(before)]
        failing = execute_msg(self.kc, "zeros(2) + zeros(3)")
        queued = [
            execute_msg(self.kc, 'ran_after_error += 1; print("must not run"); 1')
            for _ in range(6)
        ]
        ids = self.send_all(ok_cells + [failing] + queued, gaps)
        replies = self.rec.wait(ids)
        for msg_id in ids[:before]:
            self.assertEqual(replies[msg_id]["content"]["status"], "ok")
        error = replies[failing["header"]["msg_id"]]["content"]
        self.assertEqual(error["status"], "error", error)
        for msg_id in ids[before + 1:]:
            reply = replies[msg_id]
            # ipykernel's aborted reply is exactly this: no execution_count, so the cell stays [ ]:.
            self.assertEqual(reply["content"], {"status": "aborted"})
            self.assertEqual(reply["msg_type"], "execute_reply")
            kinds = [m["msg_type"] for m in self.rec.published(msg_id)]
            self.assertEqual(kinds, ["status", "status"], "an aborted cell publishes busy, idle")
        # Requests sent after the error was answered run again, numbered right after the error.
        reply, outputs = self.cell("ran_after_error")
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual(reply["content"]["execution_count"], error["execution_count"] + 1)
        values = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
        self.assertEqual(values, ["0"], "an aborted cell ran")

    def test_stop_on_error_false_keeps_running(self):
        for _ in range(ROUNDS):
            msgs = [execute_msg(self.kc, "zeros(2) + zeros(3)", stop_on_error=False),
                    execute_msg(self.kc, "40 + 2")]
            ids = self.send_all(msgs)
            replies = self.rec.wait(ids)
            self.assertEqual(replies[ids[0]]["content"]["status"], "error")
            self.assertEqual(replies[ids[1]]["content"]["status"], "ok")

    def test_a_failing_silent_cell_aborts_nothing(self):
        for _ in range(ROUNDS):
            msgs = [execute_msg(self.kc, "zeros(2) + zeros(3)", silent=True),
                    execute_msg(self.kc, "40 + 2")]
            ids = self.send_all(msgs)
            replies = self.rec.wait(ids)
            self.assertEqual(replies[ids[0]]["content"]["status"], "error")
            self.assertEqual(replies[ids[1]]["content"]["status"], "ok")


class OutputsBeforeReply(KernelCase):
    CELLS = [
        'for i in 0..50 { print(i) } 7',
        'print("a"); eprint("b"); print("c"); display(1); 2',
        'let big = ""; for i in 0..3000 { big += "0123456789abcdefghijklmnopqrstuvwxyz"; } print(big); eprint("end")',
        'print("before the error"); zeros(2) + zeros(3)',
        'display(ones(2)); print("x"); clear_output(); print("y")',
        'eprint("only stderr")',
    ]

    def test_every_output_is_sent_before_its_reply(self):
        for round in range(ROUNDS):
            msgs = [execute_msg(self.kc, code, stop_on_error=False) for code in self.CELLS]
            ids = self.send_all(msgs)
            replies = self.rec.wait(ids)
            for code, msg_id in zip(self.CELLS, ids):
                with self.subTest(round=round, code=code):
                    # The kernel dates a message when it sends it (as ipykernel's Session.send),
                    # so an output sent after its reply, such as stream text still batched when
                    # the reply went out, is dated after the reply.
                    reply = replies[msg_id]
                    published = self.rec.published(msg_id)
                    kinds = [m["msg_type"] for m in published]
                    outputs = [m for m in published if m["msg_type"] in OUTPUTS]
                    self.assertTrue(outputs, f"no outputs: {kinds}")
                    late = [(m["msg_type"], m["header"]["date"]) for m in outputs
                            if sent_at(m) > sent_at(reply)]
                    self.assertEqual(late, [], f"outputs dated after the reply "
                                     f"({reply['header']['date']}): {kinds}")
                    self.assertEqual(kinds[:2], ["status", "execute_input"])
                    self.assertEqual(published[0]["content"]["execution_state"], "busy")
                    self.assertEqual(kinds[-1], "status")
                    self.assertEqual(published[-1]["content"]["execution_state"], "idle")
                    self.assertEqual(kinds.count("status"), 2)
            statuses = [replies[m]["content"]["status"] for m in ids]
            self.assertEqual(statuses, ["ok", "ok", "ok", "error", "ok", "ok"])


class RerunKeepsMemory(KernelCase):
    """A notebook cell run again rebinds its tensor: the old one is freed, nothing accumulates."""

    kernel = SIM_KERNEL
    CELL = "let x = randn(1000, 1000).cuda();\nmemory_allocated()"

    def test_rerunning_a_cell_keeps_memory_allocated(self):
        for round in range(ROUNDS):
            with self.subTest(round=round):
                reply, outputs = self.cell(self.CELL)
                self.assertEqual(reply["content"]["status"], "ok", reply["content"])
                values = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
                self.assertEqual(values, ["4000256"])


def reset_every_port(km):
    """Open a TCP connection to each of the kernel's ports, start the ZeroMQ greeting, and drop it
    with a reset (SO_LINGER 0), as a client that crashes or loses its network does."""
    info = km.get_connection_info()
    for port in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
        with socket.create_connection((info["ip"], info[port]), timeout=TIMEOUT) as s:
            s.sendall(b"\xff" + b"\x00" * 8 + b"\x7f\x03")
            time.sleep(0.01)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.05)


class QuietShutdown(unittest.TestCase):
    """Nothing on the kernel's stderr over a whole life, however the client leaves."""

    def life(self, how):
        with tempfile.TemporaryFile() as stderr:
            km = KernelManager(kernel_name=KERNEL)
            km.start_kernel(stderr=stderr)
            kc = km.client()
            kc.start_channels()
            try:
                kc.wait_for_ready(timeout=60)
                reply = kc.execute_interactive('print("hi"); 1', timeout=TIMEOUT, output_hook=lambda m: None)
                self.assertEqual(reply["content"]["status"], "ok")
                if how == "second client comes and goes":
                    other = km.client()
                    other.start_channels()
                    other.wait_for_ready(timeout=TIMEOUT)
                    other.stop_channels()
                    time.sleep(0.05)
                if how == "client leaves first":
                    kc.stop_channels()
                    time.sleep(0.05)
                if how == "connections reset":
                    reset_every_port(km)
                    reply = kc.execute_interactive("2", timeout=TIMEOUT, output_hook=lambda m: None)
                    self.assertEqual(reply["content"]["status"], "ok")
                if how == "client leaves right after asking to shut down":
                    # The kernel still publishes shutdown_reply and idle to the closed client,
                    # whose system answers with a reset.
                    kc.shutdown()
                    kc.stop_channels()
                    deadline = time.time() + TIMEOUT
                    while km.is_alive() and time.time() < deadline:
                        time.sleep(0.02)
                km.shutdown_kernel(now=False)
                self.assertFalse(km.is_alive())
            finally:
                kc.stop_channels()
                if km.has_kernel:
                    km.shutdown_kernel(now=True)
            stderr.seek(0)
            return stderr.read().decode(errors="replace")

    def test_kernel_writes_nothing_to_stderr(self):
        hows = ["graceful", "client leaves first", "second client comes and goes",
                "connections reset", "client leaves right after asking to shut down"]
        for round in range(ROUNDS):
            for how in hows:
                with self.subTest(round=round, how=how):
                    self.assertEqual(self.life(how), "", f"stderr of a kernel ({how})")

    def test_shutdown_request_from_the_client(self):
        for round in range(ROUNDS // 4):
            with tempfile.TemporaryFile() as stderr:
                km, kc = start_new_kernel(kernel_name=KERNEL, stderr=stderr)
                try:
                    kc.shutdown()
                    kc.control_channel.get_msg(timeout=TIMEOUT)
                    deadline = time.time() + TIMEOUT
                    while km.is_alive() and time.time() < deadline:
                        time.sleep(0.02)
                    self.assertFalse(km.is_alive())
                finally:
                    kc.stop_channels()
                    km.shutdown_kernel(now=True)
                stderr.seek(0)
                self.assertEqual(stderr.read().decode(errors="replace"), "")


if __name__ == "__main__":
    unittest.main()

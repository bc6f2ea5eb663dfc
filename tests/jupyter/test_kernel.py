"""The torchlet kernel against jupyter_kernel_test (the peer suite) plus torchlet's own protocol tests.

Run through `cargo test --test kernel_jupyter`, which installs the kernelspec into a temporary
JUPYTER_PATH; by hand: `JUPYTER_PATH=DIR .venv-jupyter/bin/python -m unittest -v tests/jupyter/test_kernel.py`.
"""
import os
import time
import unittest

import jupyter_kernel_test as jkt
from jupyter_client.manager import start_new_kernel

KERNEL = os.environ.get("TORCHLET_KERNEL_NAME", "torchlet")
TIMEOUT = 15


def quiet(_msg):
    """An output hook that shows nothing (execute_interactive prints outputs by default)."""


class TorchletKernelTests(jkt.KernelTests):
    kernel_name = KERNEL
    language_name = "rhai"
    file_extension = ".rhai"

    code_hello_world = 'print("hello, world")'
    code_stderr = 'eprint("oops")'
    completion_samples = [
        {"text": "clear_out", "matches": {"clear_output"}},
        {"text": "%me", "matches": {"%mem"}},
    ]
    complete_code_samples = ["1 + 2", "let x = 1;", "fn f(a) { a * 2 }", "zeros?"]
    incomplete_code_samples = ["fn f(a) {", "let v = [1, 2,", "if true {\n  let y = 1;"]
    invalid_code_samples = ["let = 5;", "1 + + ;", "}"]
    code_page_something = "zeros?"
    code_generate_error = "undefined_name + 1"
    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": 'let s = "to"; s + "rch"', "result": "torch"},
    ]
    code_display_data = [{"code": "display(42)", "mime": "text/plain"}]
    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "6 * 7"
    code_inspect_sample = "clear_output"
    code_clear_output = "clear_output()"

    # --- torchlet's own tests, sharing the suite's kernel ---

    def run_cell(self, code, timeout=TIMEOUT, **kwargs):
        """Execute and collect (reply, iopub messages of that request up to idle)."""
        msg_id = self.kc.execute(code, **kwargs)
        reply = self.get_non_kernel_info_reply(timeout=timeout)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        outputs = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            outputs.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return reply, outputs

    def test_torchlet_interrupt_keeps_variables(self):
        self.flush_channels()
        self.run_cell("let kept = 41;")
        loop_id = self.kc.execute("let spin = 0; loop { spin += 1; }")
        time.sleep(0.5)
        request = self.kc.session.msg("interrupt_request", {})
        started = time.time()
        self.kc.control_channel.send(request)
        ctrl = self.kc.control_channel.get_msg(timeout=TIMEOUT)
        while ctrl["parent_header"].get("msg_id") != request["header"]["msg_id"]:
            ctrl = self.kc.control_channel.get_msg(timeout=TIMEOUT)
        self.assertEqual(ctrl["content"]["status"], "ok")
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertLess(time.time() - started, 5, "the running cell did not stop")
        self.assertEqual(reply["parent_header"]["msg_id"], loop_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        self.flush_channels()
        reply, outputs = self.run_cell("kept + 1")
        self.assertEqual(reply["content"]["status"], "ok")
        results = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
        self.assertEqual(results, ["42"])

    def test_torchlet_stdin_round_trip(self):
        self.flush_channels()
        msg_id = self.kc.execute('let who = input("name? "); print("hi " + who)', allow_stdin=True)
        ask = self.kc.stdin_channel.get_msg(timeout=TIMEOUT)
        self.assertEqual(ask["msg_type"], "input_request")
        self.assertEqual(ask["content"]["prompt"], "name? ")
        self.assertEqual(ask["parent_header"]["msg_id"], msg_id)
        self.kc.input("Ada")
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertEqual(reply["content"]["status"], "ok")
        text = ""
        while True:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                text += msg["content"]["text"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        self.assertEqual(text, "hi Ada\n")

    def test_torchlet_input_without_stdin_is_a_clear_error(self):
        self.flush_channels()
        reply, _ = self.run_cell('input("x? ")', allow_stdin=False)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertIn("allow_stdin", reply["content"]["evalue"])

    def test_torchlet_silent_publishes_nothing_and_keeps_the_count(self):
        self.flush_channels()
        before, _ = self.run_cell("1")
        count = before["content"]["execution_count"]
        reply, outputs = self.run_cell('let hidden = 5; print("not shown"); hidden', silent=True)
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual(reply["content"]["execution_count"], count)
        types = [m["msg_type"] for m in outputs]
        self.assertEqual(types, ["status", "status"], "silent cells publish only busy and idle")
        after, outputs = self.run_cell("hidden")
        self.assertEqual(after["content"]["execution_count"], count + 1)
        results = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
        self.assertEqual(results, ["5"])

    def test_torchlet_store_history_false_does_not_count(self):
        self.flush_channels()
        before, _ = self.run_cell("2")
        reply, _ = self.run_cell("3", store_history=False)
        self.assertEqual(reply["content"]["execution_count"], before["content"]["execution_count"])

    def test_torchlet_user_expressions(self):
        self.flush_channels()
        reply, _ = self.run_cell(
            "let ue = 3;", user_expressions={"double": "ue * 2", "bad": "no_such_name"}
        )
        expressions = reply["content"]["user_expressions"]
        self.assertEqual(expressions["double"]["status"], "ok")
        self.assertEqual(expressions["double"]["data"]["text/plain"], "6")
        self.assertEqual(expressions["bad"]["status"], "error")
        self.assertEqual(expressions["bad"]["ename"], "NameError")

    def test_torchlet_stop_on_error_aborts_queued_cells(self):
        self.flush_channels()
        first = self.kc.execute("let n = 0; while n < 300000 { n += 1; } throw \"stop here\";")
        queued = [self.kc.execute("print(\"must not run\")") for _ in range(2)]
        statuses = {}
        for _ in range(3):
            reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
            statuses[reply["parent_header"]["msg_id"]] = reply["content"]["status"]
        self.assertEqual(statuses[first], "error")
        self.assertEqual([statuses[q] for q in queued], ["aborted", "aborted"])
        self.flush_channels()
        reply, _ = self.run_cell("1 + 1")
        self.assertEqual(reply["content"]["status"], "ok", "cells sent after the abort run again")

    def test_torchlet_error_reply_and_traceback_point_at_the_line(self):
        self.flush_channels()
        reply, outputs = self.run_cell("let a = 1;\nlet b = a + missing;")
        content = reply["content"]
        self.assertEqual(content["ename"], "NameError")
        errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["traceback"], content["traceback"])
        self.assertTrue(any("line 2" in line for line in content["traceback"]))

    def test_torchlet_stream_is_batched_and_ordered(self):
        self.flush_channels()
        reply, outputs = self.run_cell('for i in 0..200 { print(i) } eprint("done"); 7')
        kinds = [m["msg_type"] for m in outputs]
        streams = [m for m in outputs if m["msg_type"] == "stream"]
        stdout = "".join(m["content"]["text"] for m in streams if m["content"]["name"] == "stdout")
        self.assertEqual(stdout, "".join(f"{i}\n" for i in range(200)))
        self.assertLess(len(streams), 20, "200 prints should not be 200 messages")
        self.assertEqual(streams[-1]["content"], {"name": "stderr", "text": "done\n"})
        self.assertLess(kinds.index("stream"), kinds.index("execute_result"))

    def test_torchlet_magics(self):
        self.flush_channels()
        self.run_cell("let magic_var = 12;")
        reply, outputs = self.run_cell("%vars")
        data = [m["content"]["data"] for m in outputs if m["msg_type"] == "execute_result"][0]
        self.assertIn("<table>", data["text/html"])
        self.assertIn("magic_var", data["text/plain"])
        reply, outputs = self.run_cell("%nonsense")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "UsageError")
        self.assertIn("%help", reply["content"]["evalue"])
        reply, outputs = self.run_cell("%time on")
        reply, outputs = self.run_cell("5 + 5")
        texts = [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"]
        self.run_cell("%time off")
        self.assertTrue(any("took" in t or "time" in t.lower() for t in texts), texts)

    def test_torchlet_unknown_request_gets_an_error_reply(self):
        self.flush_channels()
        msg = self.kc.session.msg("frobnicate_request", {})
        self.kc.shell_channel.send(msg)
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertEqual(reply["msg_type"], "frobnicate_reply")
        self.assertEqual(reply["content"]["status"], "error")
        self.flush_channels()
        reply, _ = self.run_cell("1")
        self.assertEqual(reply["content"]["status"], "ok")

    def test_torchlet_inspect_describes_a_tensor(self):
        self.flush_channels()
        self.run_cell("let inspected = zeros(2, 3);")
        self.kc.inspect("inspected + 1", cursor_pos=4)
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertTrue(reply["content"]["found"])
        text = reply["content"]["data"]["text/plain"]
        for part in ("inspected: Tensor", "shape [2, 3]", "float32", "on cpu", "24 bytes"):
            self.assertIn(part, text)

    def test_torchlet_tensor_result_has_html(self):
        self.flush_channels()
        _, outputs = self.run_cell("ones(2)")
        data = [m["content"]["data"] for m in outputs if m["msg_type"] == "execute_result"][0]
        self.assertEqual(data["text/plain"], "tensor([1., 1.])")
        self.assertIn("text/html", data)

    def test_torchlet_help_call_pages_the_same_text_as_name_query(self):
        self.flush_channels()
        by_call, outputs = self.run_cell('help("zeros")')
        by_query, _ = self.run_cell("zeros?")
        pages = [r["content"]["payload"] for r in (by_call, by_query)]
        self.assertEqual(pages[0], pages[1])
        self.assertEqual(pages[0][0]["source"], "page")
        self.assertIn("zeros(", pages[0][0]["data"]["text/plain"])
        self.assertFalse([m for m in outputs if m["msg_type"] == "stream"], "paged, not printed")

    def test_torchlet_comm_info_is_empty(self):
        self.flush_channels()
        self.kc.comm_info()
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertEqual(reply["content"], {"status": "ok", "comms": {}})


class TorchletIopubWelcome(jkt.IopubWelcomeTests):
    kernel_name = KERNEL
    support_iopub_welcome = True


class TorchletLifecycle(unittest.TestCase):
    def test_shutdown_reply_is_also_published(self):
        km, kc = start_new_kernel(kernel_name=KERNEL)
        try:
            kc.shutdown()
            reply = kc.control_channel.get_msg(timeout=TIMEOUT)
            seen = []
            deadline = time.time() + TIMEOUT
            while time.time() < deadline and "shutdown_reply" not in seen:
                try:
                    seen.append(kc.get_iopub_msg(timeout=1)["msg_type"])
                except Exception:
                    break
            self.assertIn("shutdown_reply", seen)
            self.assertEqual(reply["msg_type"], "shutdown_reply")
            deadline = time.time() + TIMEOUT
            while km.is_alive() and time.time() < deadline:
                time.sleep(0.05)
            self.assertFalse(km.is_alive(), "the kernel process exits after shutdown_reply")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

    def test_restart_gives_a_fresh_session(self):
        km, kc = start_new_kernel(kernel_name=KERNEL)
        try:
            reply = kc.execute_interactive("let before_restart = 1;", timeout=TIMEOUT, output_hook=quiet)
            self.assertEqual(reply["content"]["status"], "ok")
            km.restart_kernel(now=False)
            kc.wait_for_ready(timeout=60)
            reply = kc.execute_interactive("before_restart", timeout=TIMEOUT, output_hook=quiet)
            self.assertEqual(reply["content"]["status"], "error")
            self.assertEqual(reply["content"]["ename"], "NameError")
            self.assertEqual(reply["content"]["execution_count"], 1, "counting starts again")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)


if __name__ == "__main__":
    unittest.main()

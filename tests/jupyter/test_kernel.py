"""The torchlet kernel against jupyter_kernel_test (the peer suite) plus torchlet's own protocol tests.

Run through `cargo test --test front_ends kernel_jupyter::`, which installs the kernelspec into a temporary
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
        {"text": "%me", "matches": {"%mem", "%memplot"}},
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

    def test_torchlet_unknown_request_is_ignored_as_ipykernel_does(self):
        self.flush_channels()
        msg = self.kc.session.msg("frobnicate_request", {})
        self.kc.shell_channel.send(msg)
        info_id = self.kc.kernel_info()
        # No frobnicate_reply (ipykernel logs "Unknown message type" and answers nothing): the
        # next reply on shell is the kernel_info_reply sent after it.
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["msg_type"], "kernel_info_reply")
        self.assertEqual(reply["parent_header"]["msg_id"], info_id)
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

    def inspect_reply(self, code, cursor_pos=None):
        """The inspect_reply content for `code` with the cursor at `cursor_pos` (code points; end by default)."""
        self.flush_channels()
        self.kc.inspect(code, cursor_pos=len(code) if cursor_pos is None else cursor_pos)
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertEqual(reply["msg_type"], "inspect_reply")
        return reply["content"]

    def test_torchlet_inspect_inside_a_calls_parentheses_shows_its_signature(self):
        randn = "randn(d0, d1, …) or randn(shape_array[, opts]) — standard normal samples"
        for code in ("randn(", "let x = randn(3, ", "zeros(2) + randn(ones(3).sum(), ", "randn(\n  3,\n  "):
            content = self.inspect_reply(code)
            self.assertTrue(content["found"], code)
            self.assertEqual(content["data"]["text/plain"], randn, code)
        # The innermost call still open wins; the cursor may sit anywhere in the cell.
        code = "zeros(2, 3) + ones(4)"
        self.assertIn("ones(d0", self.inspect_reply(code, code.index("4"))["data"]["text/plain"])
        self.assertIn("zeros(d0", self.inspect_reply(code, code.index("3"))["data"]["text/plain"])
        self.assertFalse(self.inspect_reply(code, code.index("+"))["found"])
        self.assertIn("t.sum(", self.inspect_reply("x.sum(0, ")["data"]["text/plain"])
        self.assertIn("cuda::memory_allocated(", self.inspect_reply("cuda::memory_allocated(")["data"]["text/plain"])
        self.assertFalse(self.inspect_reply("randn(3) + ")["found"], "a closed call is not inspected")
        self.assertFalse(self.inspect_reply('print("randn(", ')["data"].get("text/plain", "").startswith("randn"))

    def test_torchlet_inspect_cursor_counts_code_points(self):
        # Each of é, 😀 and ü is one code point but two or four UTF-8 bytes (😀 is two UTF-16 units).
        code = 'let s = "é😀ü"; randn('
        content = self.inspect_reply(code)
        self.assertTrue(content["found"])
        self.assertIn("randn(d0", content["data"]["text/plain"])
        self.run_cell('let plain_name = "x";')
        code = 'let s = "é😀"; print(plain_name)'
        text = self.inspect_reply(code, code.index("plain_name") + 2)["data"]["text/plain"]
        self.assertTrue(text.startswith("plain_name: variable of type"), text)

    def complete_types(self, code):
        """complete_reply for `code` (cursor at the end): its content, and its typed entries by text."""
        self.flush_channels()
        self.kc.complete(code, len(code))
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        content = reply["content"]
        entries = content["metadata"]["_jupyter_types_experimental"]
        self.assertEqual([e["text"] for e in entries], content["matches"])
        for e in entries:
            self.assertEqual((e["start"], e["end"]), (content["cursor_start"], content["cursor_end"]))
        return content, {e["text"]: e for e in entries}

    def test_torchlet_completion_items_carry_their_type(self):
        self.run_cell("let typed_var = 1; fn typed_fn(a, b) { a + b }")
        _, found = self.complete_types("typed_")
        self.assertEqual(found["typed_var"]["type"], "variable")
        self.assertEqual(found["typed_fn"]["type"], "function")
        self.assertEqual(found["typed_fn"]["signature"], "typed_fn(a, b)")
        _, found = self.complete_types("zer")
        self.assertEqual(found["zeros"]["type"], "function")
        self.assertTrue(found["zeros"]["signature"].startswith("zeros(d0, d1, …)"))
        _, found = self.complete_types("x.su")
        self.assertEqual(found["sum"]["type"], "method")
        _, found = self.complete_types("x.sha")
        self.assertEqual(found["shape"]["type"], "property")
        self.assertNotIn("signature", found["shape"])
        _, found = self.complete_types("cu")
        self.assertEqual(found["cuda"]["type"], "module")
        _, found = self.complete_types("no_")
        self.assertEqual(found["no_grad"]["type"], "keyword")
        _, found = self.complete_types("%me")
        self.assertEqual(found["%mem"]["type"], "magic")

    def test_torchlet_completion_cursors_count_code_points(self):
        code = 'let s = "é😀ü"; zer'
        content, found = self.complete_types(code)
        self.assertIn("zeros", found)
        self.assertEqual((content["cursor_start"], content["cursor_end"]), (len(code) - 3, len(code)))

    def test_torchlet_vars_html_has_every_column_of_the_text(self):
        self.run_cell("let whole = zeros(1000, 1000); let first_row = whole[0]; let label = \"run\";")
        _, outputs = self.run_cell("%vars")
        data = [m["content"]["data"] for m in outputs if m["msg_type"] == "execute_result"][0]
        plain, html = data["text/plain"], data["text/html"]
        tensor_header = plain.splitlines()[0].split()
        self.assertEqual(tensor_header, ["name", "type", "shape", "dtype", "device", "bytes", "holds", "storage"])
        for column in tensor_header + ["value"]:
            self.assertIn(f"<th>{column}</th>", html)
        row = html.split("<td>first_row</td>")[1].split("</tr>")[0]
        for cell in ("Tensor", "[1000]", "float32", "cpu", "4000 (3.91 KiB)", "4000000 (3.81 MiB)", "#1 shared with whole"):
            self.assertIn(f"<td>{cell}</td>", row)
        self.assertIn("<td>label</td>", html)

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

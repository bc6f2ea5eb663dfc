// Helpers that read and drive a JupyterLab 4 page through playwright-core: waits on DOM state, never sleeps.

/** The notebook on show: other notebooks' panels stay in the DOM, hidden. */
export const NB = '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook';

/** How long a step may take on a loaded 2-core machine (a Run All, a kernel start). */
export const STEP_MS = 180_000;

/** Open `file` in JupyterLab and wait until all its cells are shown and its kernel is idle.
 * `debugger: false` for a kernel without one (the Python kernel): there is no debugInfo reply
 * to wait for, so a Run All that finds no kernel yet must be repeated (`runAllUntilStarted`). */
export async function openNotebook(page, base, token, file, { debugger: hasDebugger = true } = {}) {
  const reply = await page.request.get(`${base}/api/contents/${file}?token=${token}`);
  if (!reply.ok()) throw new Error(`GET /api/contents/${file}: ${reply.status()}`);
  const count = (await reply.json()).content.cells.length;
  await page.goto(`${base}/lab/tree/${file}?token=${token}`, { timeout: STEP_MS });
  // The panel shows one empty cell until the file has loaded: wait for the file's cells.
  await page.waitForFunction(
    ([nb, n]) => document.querySelectorAll(nb + ' .jp-Cell').length === n,
    [NB, count],
    { timeout: STEP_MS, polling: 100 }
  );
  await waitIdle(page);
  if (!hasDebugger) {
    // No debugInfo to wait for: the kernel is idle; give its connection a moment to settle.
    await page.waitForTimeout(2000);
    await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-InputArea-prompt').first().click();
    return;
  }
  // The debugger's button is enabled once its debugInfo request came back over the session's
  // kernel connection: before that, Run All can find no kernel and silently run nothing.
  await page.waitForFunction(
    sel => [...document.querySelectorAll(sel)].some(b =>
      !b.hasAttribute('disabled') && b.getAttribute('aria-disabled') !== 'true' &&
      !b.querySelector('[disabled]')),
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-DebuggerBugButton',
    { timeout: STEP_MS, polling: 100 }
  );
  // Menu commands act on the focused notebook; a freshly opened one has no focus yet.
  await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-InputArea-prompt').first().click();
}

/** Wait until the notebook's kernel has started and is idle. */
export async function waitIdle(page) {
  await page.waitForFunction(
    () => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator')
      ?.getAttribute('data-status') === 'idle',
    null,
    { timeout: STEP_MS, polling: 100 }
  );
}

/** Run All until some cell has run (a prompt with a number), for a kernel whose readiness
 * cannot be seen: a Run All sent before the connection is up runs nothing. */
export async function runAllUntilStarted(page) {
  for (let attempt = 0; attempt < 5; attempt++) {
    await runAll(page);
    try {
      await waitPrompts(page, `ps => ps.some(p => /^\\[(\\d+|\\*)\\]:$/.test(p))`, 20_000);
      return;
    } catch (e) {
      // Nothing ran: the kernel was not connected yet.
    }
  }
  throw new Error('Run All never started a cell');
}

/** Click Run ▸ Run All Cells, as a user does. */
export async function runAll(page) {
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Run All Cells$/ }).click();
}

/** The input prompt of every code cell, in order ("[1]:", "[ ]:", "[*]:"). */
export async function prompts(page) {
  return page.$$eval(`${NB} .jp-CodeCell .jp-InputArea-prompt`, els =>
    els.map(e => e.textContent.trim()));
}

/** Wait until `done(prompts)` holds for the code cells' prompts (evaluated in the page). */
export async function waitPrompts(page, doneSource, timeout = STEP_MS) {
  await page.waitForFunction(
    ([nb, source]) => {
      const ps = [...document.querySelectorAll(nb + ' .jp-CodeCell .jp-InputArea-prompt')]
        .map(e => e.textContent.trim());
      return new Function('prompts', `return (${source})(prompts);`)(ps);
    },
    [NB, doneSource],
    { timeout, polling: 100 }
  );
}

/** What every code cell shows: its prompt, and each output's MIME type, text and table headers. */
export async function cells(page) {
  return page.$$eval(`${NB} .jp-CodeCell`, els => els.map(cell => ({
    prompt: cell.querySelector('.jp-InputArea-prompt')?.textContent.trim() ?? null,
    source: [...cell.querySelectorAll('.jp-InputArea-editor .cm-line')].map(l => l.textContent).join('\n'),
    outputs: [...cell.querySelectorAll('.jp-OutputArea-output')].map(o => ({
      mime: o.getAttribute('data-mime-type'),
      text: o.textContent,
      headers: [...o.querySelectorAll('table th')].map(th => th.textContent.trim()),
    })),
  })));
}

/** Run code cell `index` alone (click it, Ctrl+Enter) and wait for its new execution count. */
export async function rerunCell(page, index) {
  const cell = page.locator(`${NB} .jp-CodeCell`).nth(index);
  const before = await cell.locator('.jp-InputArea-prompt').textContent();
  await cell.locator('.jp-InputArea-editor').click();
  await page.keyboard.press('Control+Enter');
  await page.waitForFunction(
    ([nb, i, old]) => {
      const p = document.querySelectorAll(nb + ' .jp-CodeCell .jp-InputArea-prompt')[i]
        ?.textContent.trim();
      return p && p !== old.trim() && /^\[\d+\]:$/.test(p);
    },
    [NB, index, before],
    { timeout: STEP_MS, polling: 100 }
  );
  await waitIdle(page);
}

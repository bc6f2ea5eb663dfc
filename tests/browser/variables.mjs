// The debugger's Variables panel on the open torchlet notebook: the listed variables, a tensor's fields, and its rich view (its block in its segment).
import { join } from 'node:path';

import { STEP_MS } from './lab.mjs';

const panel = '.jp-NotebookPanel:not(.lm-mod-hidden)';

/** Switch the debugger on for the current notebook and read what the panel shows. */
export async function variablesPanel(page, { out }) {
  await page.locator(`${panel} .jp-DebuggerBugButton`).first().click({ timeout: STEP_MS });
  // Switching the debugger on can open its sidebar by itself a moment later, and a click on the
  // tab then closes it again (a run failed so: the variables listed, but hidden). So wait for the
  // panel first, and click the tab only if it stays closed.
  const tab = page.locator('.lm-TabBar-tab[data-id="jp-debugger-sidebar"]');
  const body = page.locator('.jp-DebuggerVariables-body').first();
  const opened = await body.waitFor({ state: 'visible', timeout: 5000 }).then(() => true, () => false);
  if (!opened) {
    await tab.click();
    await body.waitFor({ state: 'visible', timeout: STEP_MS });
  }
  const names = '.jp-DebuggerVariables-body .jp-DebuggerVariables-name';
  await page.waitForFunction(
    sel => [...document.querySelectorAll(sel)].some(e => e.textContent === 'x'),
    names,
    { timeout: STEP_MS, polling: 100 }
  );
  const rows = await page.$$eval('.jp-DebuggerVariables-body .jp-TreeItem', items => items.map(i => {
    const detail = i.querySelector('.jp-DebuggerVariables-detail');
    // Whether the size in the row is on screen: its text's box ends inside the row's and the panel's.
    let sizeVisible = null;
    const text = detail?.firstChild;
    const size = text && /\d+(\.\d+)? (B|KiB|MiB|GiB)/.exec(detail.textContent);
    if (size && text.nodeType === Node.TEXT_NODE) {
      const range = document.createRange();
      range.setStart(text, size.index);
      range.setEnd(text, size.index + size[0].length);
      const right = range.getBoundingClientRect().right;
      const panel = i.closest('.jp-DebuggerVariables-body').getBoundingClientRect().right;
      sizeVisible = right <= Math.min(panel, detail.getBoundingClientRect().right) + 0.5;
    }
    return {
      name: i.querySelector('.jp-DebuggerVariables-name')?.textContent ?? null,
      detail: detail?.textContent ?? null,
      sizeVisible,
    };
  }));
  await page.screenshot({ path: join(out, 'variables.png') });
  const x = page.locator('.jp-DebuggerVariables-body .jp-TreeItem', {
    has: page.locator('.jp-DebuggerVariables-name', { hasText: /^x$/ }),
  }).first();
  await x.hover();
  await x.locator('.jp-DebuggerVariables-renderVariable').first().click({ timeout: STEP_MS });
  const view = '.jp-VariableRendererPanel-renderer .torchlet-segment-view';
  await page.waitForSelector(view, { timeout: STEP_MS });
  const rich = await page.$eval(view, v => ({
    text: v.textContent,
    blocks: v.querySelectorAll('.torchlet-block').length,
    own: v.querySelectorAll('.torchlet-this-block').length,
  }));
  await page.screenshot({ path: join(out, 'rich_variable.png') });
  return { rows, rich };
}

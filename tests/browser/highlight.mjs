// The colours CodeMirror gives a torchlet cell with an object map and a backtick string: every text run with its computed colour.
import { join } from 'node:path';

import { STEP_MS } from './lab.mjs';

/** The tokens of the cell that holds `#{device`, line by line, with their colours, and a screenshot of it. */
export async function highlighting(page, { out }) {
  const cell = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell', {
    has: page.locator('.cm-line', { hasText: '#{device' }),
  }).first();
  await cell.scrollIntoViewIfNeeded({ timeout: STEP_MS });
  const lines = await cell.locator('.cm-line').evaluateAll(els => els.map(line => {
    const runs = [];
    const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.textContent.trim()) {
        runs.push({ text: node.textContent, color: getComputedStyle(node.parentElement).color });
      }
    }
    return runs;
  }));
  await cell.screenshot({ path: join(out, 'highlight.png') });
  const mime = await page.$eval('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook',
    n => n.getAttribute('data-jp-code-mime') ?? null).catch(() => null);
  return { lines, mime };
}

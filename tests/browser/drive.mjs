// Drives JupyterLab in headless chromium through the browser test's notebooks and writes what it saw to $OUT_DIR/results.json.
//
// It only observes and records (prompts, outputs, panel contents, token classes); tests/front_ends/browser.rs
// judges the results. Environment: LAB_URL, LAB_TOKEN, OUT_DIR, CHROMIUM (the executable).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

import { NB, cells, openNotebook, prompts, rerunCell, runAll, runAllUntilStarted, waitIdle, waitPrompts } from './lab.mjs';
import { highlighting } from './highlight.mjs';
import { variablesPanel } from './variables.mjs';

const env = name => {
  const value = process.env[name];
  if (!value) throw new Error(`drive.mjs needs ${name} in the environment`);
  return value;
};
const base = env('LAB_URL');
const token = env('LAB_TOKEN');
const out = env('OUT_DIR');

/** Run All on run_all.ipynb: stop_on_error, aborted prompts, re-running a cell, then the cell behind the failure alone. */
async function runAllChecks(page) {
  await openNotebook(page, base, token, 'run_all.ipynb');
  const before = await cells(page);
  const failing = before.findIndex(c => c.source.includes('zeros(2) + zeros(3)'));
  const rerun = before.findIndex(c => c.source.includes('randn(1000, 1000).cuda()'));
  const probe = before.length - 1;
  await runAll(page);
  // Done when the failing cell has its number and no cell is still queued ([*]).
  await waitPrompts(page, `ps => /^\\[\\d+\\]:$/.test(ps[${failing}]) && !ps.some(p => p.includes('*'))`);
  await waitIdle(page);
  const afterRunAll = await cells(page);
  await page.screenshot({ path: join(out, 'run_all.png') });
  await rerunCell(page, rerun);
  const rerunOnce = (await cells(page))[rerun];
  await rerunCell(page, rerun);
  const rerunTwice = (await cells(page))[rerun];
  await rerunCell(page, probe);
  const probeAlone = (await cells(page))[probe];
  return { failing, rerun, probe, afterRunAll, rerunOnce, rerunTwice, probeAlone };
}

/** The article's last cell, `plot_memory()`: how its SVG output rendered, and a picture of it. */
async function plotOutput(page) {
  const plot = page.locator(`${NB} .jp-CodeCell`).last()
    .locator('.jp-OutputArea-output[data-mime-type="image/svg+xml"]');
  if (await plot.count() === 0) return { found: false };
  await plot.first().scrollIntoViewIfNeeded();
  await plot.first().screenshot({ path: join(out, 'inline_plot.png') });
  return plot.first().evaluate(o => {
    const img = o.querySelector('img');
    const svg = o.querySelector('svg');
    const box = o.getBoundingClientRect();
    const picture = (img || svg)?.getBoundingClientRect();
    // What shows the notebook: the chart is cut where it runs past the notebook's visible area.
    const area = o.closest('.jp-WindowedPanel-outer, .jp-Notebook')?.getBoundingClientRect() ?? box;
    return {
      found: true,
      // JupyterLab shows an SVG output either inline or as an <img> of a data URL.
      rendered: Boolean((img && img.complete && img.naturalWidth > 0) || svg),
      width: Math.round(picture ? picture.width : box.width),
      height: Math.round(picture ? picture.height : box.height),
      cut: Math.max(0, Math.round((picture ? picture.right : 0) - Math.min(box.right, area.right))),
    };
  });
}

/** Run All on the article's notebook; every code cell must end with a number. */
async function article(page) {
  await openNotebook(page, base, token, 'article.ipynb');
  await runAll(page);
  await waitPrompts(page, `ps => ps.length > 0 && ps.every(p => /^\\[\\d+\\]:$/.test(p))`);
  await waitIdle(page);
  const shown = await cells(page);
  await page.screenshot({ path: join(out, 'article.png') });
  const inlinePlot = await plotOutput(page);
  return { cells: shown, prompts: await prompts(page), inlinePlot };
}

/** Run All on the article's Python notebook, in the torchlet (Python) kernel the toolbar names. */
async function pythonArticle(page) {
  await openNotebook(page, base, token, 'article_python.ipynb', { debugger: false });
  await runAllUntilStarted(page);
  await waitPrompts(page, `ps => ps.length > 0 && ps.every(p => /^\\[\\d+\\]:$/.test(p))`);
  await waitIdle(page);
  const shown = await cells(page);
  await page.screenshot({ path: join(out, 'article_python.png') });
  const kernel = await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar-kernelName').textContent();
  return { cells: shown, kernel };
}

async function main() {
  const profile = mkdtempSync(join(tmpdir(), 'torchlet-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env('CHROMIUM'),
    headless: true,
    // The screen: 1280×800, the debugger's sidebar open beside the notebook.
    viewport: { width: 1280, height: 800 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const results = {};
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  try {
    for (const [name, step] of Object.entries({ runAllChecks, variablesPanel, highlighting, article, pythonArticle })) {
      const started = Date.now();
      try {
        results[name] = await step(page, { base, token, out });
      } catch (e) {
        results[name] = { failed: String(e.stack || e) };
        await page.screenshot({ path: join(out, `${name}-failed.png`) }).catch(() => {});
      }
      results[name].seconds = (Date.now() - started) / 1000;
    }
  } finally {
    results.pageErrors = errors;
    writeFileSync(join(out, 'results.json'), JSON.stringify(results, null, 1));
    await context.close();
  }
}

main().catch(e => {
  console.error(e);
  process.exit(1);
});

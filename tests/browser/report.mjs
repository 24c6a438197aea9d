// report.mjs -- browser tests of `arbiter report --html`: the demo's report loaded from file://
// with JavaScript on and the network blocked (every section there, the charts rendered, each chart
// titled, no console error, no request but the file itself, a screenshot and a PDF print), and the
// report of a hostile store (no injected element, attribute or script ran; the hostile text shown
// as text).
// Invariants: the report under test is only read, never changed; every check prints one line.
// It does NOT judge the numbers in the report: the unit tests of the metrics do that.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, run, watchPage } from './lib.mjs';
import { MODELS, JUDGES, ANNOTATOR } from './hostile.mjs';

export const SECTIONS = ['summary', 'verdicts', 'position-bias', 'human-agreement', 'judge-agreement',
  'win-rates', 'ratings', 'elo-trend', 'peer-weights', 'discussions', 'worst-cases'];

// loadOffline(browser, file): opens FILE from file:// with JavaScript enabled and every other
// request refused; returns {context, page, seen, url}.
async function loadOffline(browser, file) {
  const url = pathToFileURL(file).href;
  const context = await browser.newContext({ javaScriptEnabled: true, viewport: { width: 1280, height: 900 } });
  await context.route('**', (route) => (route.request().url() === url ? route.continue() : route.abort()));
  const page = await context.newPage();
  // a wait, not a timed check: on a loaded machine the demo report's full-page screenshot
  // took over 15 s (57 charts); a page that never gets there still fails, later
  page.setDefaultTimeout(120000);
  const seen = watchPage(page);
  await page.goto(url, { waitUntil: 'load' });
  return { context, page, seen, url };
}

// structure(page): what the checks of both reports need, read from the DOM in one go.
function structure(page, sections) {
  return page.evaluate((ids) => {
    const topSvgs = [...document.querySelectorAll('svg')].filter((s) => !s.parentElement.closest('svg'));
    const csp = document.querySelector('meta[http-equiv="Content-Security-Policy" i]');
    return {
      scripts: document.querySelectorAll('script').length,
      csp: csp ? csp.getAttribute('content') : null,
      cspInHead: csp ? csp.parentElement === document.head : false,
      missing: ids.filter((id) => !document.getElementById(id)),
      invisible: ids.filter((id) => {
        const e = document.getElementById(id);
        return e && !(e.getClientRects().length && e.getBoundingClientRect().height > 0);
      }),
      // A word broken over lines in a table cell or heading means a squeezed column: a text
      // node may take at most one line per word (breaks after - / , _ . : ; = | count as
      // spaces), else some word was split letter by letter.
      brokenWords: [...document.querySelectorAll('th, td, caption, h1, h2, h3, h4')].flatMap((cell) => {
        const found = [];
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const text = n.textContent.trim();
          if (!text) continue;
          const range = document.createRange();
          range.selectNodeContents(n);
          const lines = new Set([...range.getClientRects()].filter((q) => q.width > 0).map((q) => Math.round(q.top))).size;
          const words = text.split(/\s+|(?<=[-/,_.:;=|])/).filter(Boolean).length;
          if (lines > words) found.push(`<${cell.localName}> "${text.slice(0, 50)}": ${lines} lines for ${words} words (${Math.round(cell.getBoundingClientRect().width)} px wide)`);
        }
        return found;
      }),
      svgs: topSvgs.map((s) => {
        const r = s.getBoundingClientRect();
        const title = s.querySelector(':scope > title');
        return { role: s.getAttribute('role'), title: title ? title.textContent.trim() : null,
          w: r.width, h: r.height, section: s.closest('[id]')?.id ?? null };
      }),
    };
  }, sections);
}

// scriptSrc(csp): the directive that governs scripts (script-src, else default-src), or null.
function scriptSrc(csp) {
  const dirs = Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).filter((d) => d[0])
    .map(([k, ...v]) => [k.toLowerCase(), v.map((x) => x.toLowerCase())]));
  return dirs['script-src'] ?? dirs['default-src'] ?? null;
}

// hostileDom(page, own): every trace an injection would leave in the DOM. own: selectors of
// the page's own elements that would otherwise count (the web app's script and login form).
export function hostileDom(page, own = []) {
  return page.evaluate((ownSelectors) => {
    const mine = (e) => ownSelectors.some((sel) => e.matches(sel));
    const all = [...document.querySelectorAll('*')];
    const onAttrs = [];
    const jsLinks = [];
    for (const e of all) {
      for (const a of e.attributes) {
        if (/^on/i.test(a.name)) onAttrs.push(`<${e.localName} ${a.name}>`);
        if (/(^|:)(href|src|action|formaction|xlink:href)$/i.test(a.name) &&
            /^\s*javascript:/i.test(a.value)) jsLinks.push(`<${e.localName} ${a.name}="${a.value}">`);
      }
    }
    const tags = ['script', 'img', 'iframe', 'object', 'embed', 'base', 'form', 'link[rel=import]',
      'meta[http-equiv="refresh" i]', 'a[href^="javascript" i]'];
    return {
      pwned: typeof window.__pwned,
      tags: Object.fromEntries(tags.map((t) => [t, [...document.querySelectorAll(t)].filter((e) => !mine(e)).length])),
      onAttrs, jsLinks,
      text: document.documentElement.textContent,
      visibleText: document.body ? document.body.innerText : '',
    };
  }, own);
}

// checkHostileDom(label, dom): the injection checks shared with the annotation tests.
export function checkHostileDom(label, dom) {
  check(`${label}: window.__pwned is undefined`, dom.pwned === 'undefined', `typeof window.__pwned = ${dom.pwned}`);
  const present = Object.entries(dom.tags).filter(([, n]) => n > 0);
  check(`${label}: no injected element (script, img, iframe, object, embed, base, form, meta refresh, javascript: link)`,
    present.length === 0, () => present.map(([t, n]) => `${n} × ${t}`).join(', '));
  check(`${label}: no element has an on* attribute`, dom.onAttrs.length === 0, () => dom.onAttrs.slice(0, 10).join('\n'));
  check(`${label}: no javascript: URL in any attribute`, dom.jsLinks.length === 0, () => dom.jsLinks.slice(0, 10).join('\n'));
  check(`${label}: text escaped once, not unescaped ("&lt;b&gt;" stays as typed)`,
    !dom.text.includes('<b>already escaped'), 'found "<b>already escaped": an entity in the input was decoded');
}

function checkNoErrors(label, seen, url) {
  check(`${label}: no console errors`, seen.consoleErrors.length === 0, () => seen.consoleErrors.slice(0, 10).join('\n'));
  check(`${label}: no uncaught page errors`, seen.pageErrors.length === 0, () => seen.pageErrors.join('\n'));
  const others = seen.requests.filter((u) => u !== url && !u.startsWith('data:'));
  check(`${label}: no request but the file itself (self-contained)`, others.length === 0, () => others.slice(0, 10).join('\n'));
  check(`${label}: no failed requests`, seen.failedRequests.length === 0, () => seen.failedRequests.slice(0, 10).join('\n'));
}

function checkStructure(label, s, minCharts) {
  check(`${label}: no <script> element`, s.scripts === 0, `${s.scripts} script elements`);
  check(`${label}: has a Content-Security-Policy meta in <head>`, s.csp !== null && s.cspInHead,
    s.csp === null ? 'no meta http-equiv=Content-Security-Policy' : 'the CSP meta is not a child of <head>');
  if (s.csp !== null) {
    const src = scriptSrc(s.csp);
    check(`${label}: the CSP forbids scripts (script-src or default-src 'none')`,
      src !== null && src.length === 1 && src[0] === "'none'", `CSP: ${s.csp}`);
  }
  check(`${label}: every section is there (#${SECTIONS.join(', #')})`, s.missing.length === 0, `missing: #${s.missing.join(', #')}`);
  check(`${label}: every section is rendered (non-zero height)`, s.invisible.length === 0, `not rendered: #${s.invisible.join(', #')}`);
  check(`${label}: no word in a table cell or heading is broken over lines (no squeezed column)`,
    s.brokenWords.length === 0, () => `${s.brokenWords.length} text(s), e.g.\n${s.brokenWords.slice(0, 6).join('\n')}`);
  const rendered = s.svgs.filter((v) => v.w > 0 && v.h > 0);
  check(`${label}: at least ${minCharts} charts rendered with a non-zero size (${rendered.length} of ${s.svgs.length})`,
    rendered.length >= minCharts, () => JSON.stringify(s.svgs));
  const noRole = s.svgs.filter((v) => v.role !== 'img');
  check(`${label}: every chart is <svg role="img">`, noRole.length === 0, () => JSON.stringify(noRole));
  const untitled = s.svgs.filter((v) => !v.title);
  check(`${label}: every chart has a non-empty <title>`, untitled.length === 0, () => JSON.stringify(untitled));
}

// reportTests: the demo report (a) and the hostile report (b).
export async function demoReportTests({ arb, browser, artifacts, demoDb, dir }) {
  const html = path.join(dir, 'report.html'), md = path.join(dir, 'report.md');
  const t0 = Date.now();
  const r = run(arb, ['report', '--db', demoDb, '--html', html, '--markdown', md]);
  const ms = Date.now() - t0;
  if (!check(`report: arbiter report exits 0 on the demo store (${ms} ms)`, r.code === 0, `exit ${r.code}: ${r.stderr}`)) return;
  check('report: wrote the HTML file', fs.existsSync(html) && fs.statSync(html).size > 1000);
  check('report: wrote the Markdown file', fs.existsSync(md) && fs.statSync(md).size > 100);
  fs.copyFileSync(html, path.join(artifacts, 'report.html'));
  if (fs.existsSync(md)) fs.copyFileSync(md, path.join(artifacts, 'report.md'));

  const { context, page, seen, url } = await loadOffline(browser, html);
  try {
    const s = await structure(page, [...SECTIONS, 'persona']);
    checkStructure('report', s, 6);
    // the demo runs a persona study (METHODS §9): its section, with a difference heat map, the
    // means and, in phase 2, the win rates and the position effect apart, all drawn
    const persona = s.svgs.filter((v) => v.section === 'persona');
    check(`report: the persona section is there with its charts drawn (${persona.length})`,
      !s.missing.includes('persona') && persona.length >= 6 && persona.every((v) => v.w > 0 && v.h > 0),
      () => JSON.stringify(persona));
    const dom = await hostileDom(page);
    check('report: the position effect is labelled "position, not identity"',
      dom.visibleText.includes('Position, not identity'));
    for (const m of ['atlas-large', 'birch-medium', 'cedar-small', 'drift-tiny', 'sim-fair', 'sim-primacy']) {
      check(`report: names ${m}`, dom.visibleText.includes(m));
    }
    await page.screenshot({ path: path.join(artifacts, 'report.png'), fullPage: true });
    check('report: full-page screenshot taken', fs.statSync(path.join(artifacts, 'report.png')).size > 10000);
    const pdfPath = path.join(artifacts, 'report.pdf');
    await page.pdf({ path: pdfPath, format: 'A4', printBackground: true, margin: { top: '12mm', bottom: '12mm', left: '12mm', right: '12mm' } });
    const pdf = fs.readFileSync(pdfPath);
    const pages = (pdf.toString('latin1').match(/\/Type\s*\/Page[^s]/g) || []).length;
    check(`report: prints to PDF (${pages} pages, ${(pdf.length / 1024).toFixed(0)} KiB)`,
      pdf.subarray(0, 5).toString() === '%PDF-' && pages >= 1 && pdf.length > 10000);
    checkNoErrors('report', seen, url);
  } finally {
    await context.close();
  }
}

export async function hostileReportTests({ arb, browser, artifacts, hostileDb, dir }) {
  const html = path.join(dir, 'report-hostile.html');
  const r = run(arb, ['report', '--db', hostileDb, '--html', html]);
  if (!check('hostile report: arbiter report exits 0', r.code === 0, `exit ${r.code}: ${r.stderr}`)) return;
  fs.copyFileSync(html, path.join(artifacts, 'report-hostile.html'));
  const { context, page, seen, url } = await loadOffline(browser, html);
  try {
    await page.waitForTimeout(300); // time for an onload/onerror handler to fire, were there one
    const s = await structure(page, SECTIONS);
    checkStructure('hostile report', s, 6);
    const dom = await hostileDom(page);
    checkHostileDom('hostile report', dom);
    check('hostile report: "<script>window.__pwned=1</script>" is shown as text',
      dom.visibleText.includes('<script>window.__pwned=1</script>'));
    for (const [what, name] of [['candidate', MODELS.cand], ['baseline', MODELS.base], ['third model', MODELS.third],
      ['sbs judge', JUDGES.sbs], ['tournament judge A', JUDGES.a], ['tournament judge B', JUDGES.b]]) {
      check(`hostile report: the ${what}'s name is shown whole, as text`, dom.visibleText.includes(name),
        `not found: ${name}`);
    }
    check('hostile report: the annotator name is not interpreted (if shown, as text)',
      !dom.text.includes('ann-7f3a') || dom.text.includes(ANNOTATOR));
    await page.screenshot({ path: path.join(artifacts, 'report-hostile.png'), fullPage: true });
    checkNoErrors('hostile report', seen, url);
  } finally {
    await context.close();
  }
}

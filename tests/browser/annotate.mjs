// annotate.mjs -- browser tests of `arbiter annotate`, the labelling web app: logging in through
// the form, labelling by clicks and by keys, the progress line and the done state, blind
// labelling (no model name in the page or in the API's answers), answers rendered as text, what
// lands in human_labels and annotation_tasks (verdicts mapped through the shown order), a wrong
// token, two annotators with --overlap 1, `arbiter audit` seeing the labels at once, and a label
// surviving SIGKILL of the server.
// Invariants: every server runs on a copy of a store made for it, on 127.0.0.1 and a free port,
// and is killed at the end of its group; the token is random and only in a 0600 file.
// It does NOT test the label statistics: tests/test_labels.c and the audit tests do.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { check, bad, run, sql, startServer, watchPage, sleep } from './lib.mjs';
import { MODELS, JUDGES, N_ITEMS } from './hostile.mjs';
import { hostileDom, checkHostileDom } from './report.mjs';

const DEMO_MODELS = ['atlas-large', 'birch-medium', 'cedar-small', 'drift-tiny'];

// startAnnotate(arb, db, dir, name, extra): a server on DB with a fresh random 32-character
// token; returns {url, token, db, kill, log}.
async function startAnnotate(arb, db, dir, name, extra = []) {
  const token = crypto.randomBytes(24).toString('base64url'); // 24 bytes -> 32 characters
  const tokenFile = path.join(dir, `${name}.token`);
  fs.writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  const srv = await startServer(arb, ['annotate', '--db', db, '--token-file', tokenFile, '--port', '0',
    '--port-file', '{port-file}', ...extra], dir, name);
  return { ...srv, url: `http://127.0.0.1:${srv.port}`, token, db };
}

// copyStore(src, dir, name): a consistent copy of a store (WAL included) for one server.
function copyStore(src, dir, name) {
  const dst = path.join(dir, `${name}.db`);
  sql(src, `vacuum into '${dst.replace(/'/g, "''")}'`);
  return dst;
}

async function newPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  // Chromium asks every site for /favicon.ico and logs the 404 as a console error; the app has
  // none and needs none, so the browser gets an empty one instead.
  await context.route('**/favicon.ico', (route) => route.fulfill({ status: 204, body: '' }));
  const page = await context.newPage();
  page.setDefaultTimeout(10000);
  const seen = watchPage(page);
  // Every API answer, to check that none names a model.
  seen.api = [];
  page.on('response', async (r) => {
    if (!r.url().includes('/api/')) return;
    try { seen.api.push({ url: r.url(), status: r.status(), body: await r.text() }); } catch { /* gone */ }
  });
  return { context, page, seen };
}

async function login(page, server, token, annotator) {
  await page.goto(server.url + '/');
  await page.locator('#login-form').waitFor({ state: 'visible' });
  await page.fill('#token', token);
  await page.fill('#annotator', annotator);
  await page.click('#login');
}

// view(page): the task view as a person sees it.
function view(page) {
  return page.evaluate(() => {
    const $ = (s) => document.querySelector(s);
    const shown = (e) => !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    return {
      question: $('#question')?.textContent ?? null,
      questionShown: shown($('#question')),
      referenceShown: shown($('#reference')),
      reference: $('#reference')?.textContent ?? null,
      a1: $('#answer-1')?.textContent ?? null,
      a2: $('#answer-2')?.textContent ?? null,
      progress: $('#progress')?.textContent ?? '',
      done: shown($('#done')),
      loginShown: shown($('#login-form')),
      error: shown($('#error')) ? $('#error').textContent.trim() : '',
      text: document.body.innerText,
      html: document.documentElement.outerHTML,
    };
  });
}

function parseProgress(text) {
  const m = /(\d+)\s*labelled\s*·\s*(\d+)\s*left/.exec(text);
  return m ? { labelled: Number(m[1]), left: Number(m[2]) } : null;
}

// waitForTask(page): until a task or the done state shows; returns the view.
async function waitForTask(page) {
  await page.waitForFunction(() => {
    const shown = (e) => !!e && e.getClientRects().length > 0;
    return shown(document.querySelector('#done')) ||
      (shown(document.querySelector('#question')) && document.querySelector('#question').textContent.trim() !== '');
  });
  return view(page);
}

// act(page, action, before): does one click or key press and waits for the view to move on:
// the POST answered, then the done state, or another task on screen with its buttons enabled
// again (the progress line alone changes before the next task arrives). Returns the new view.
async function act(page, action, before) {
  const posted = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/api/label'));
  await sleep(30); // a person takes time: time_ms must be > 0
  if (action.kind === 'click') await page.click(`button[data-choice="${action.choice}"]`);
  else await page.keyboard.press(action.key);
  const resp = await posted;
  await page.waitForFunction((prev) => {
    const $ = (s) => document.querySelector(s);
    const shown = (e) => !!e && e.getClientRects().length > 0;
    if (shown($('#done'))) return true;
    const moved = $('#question')?.textContent !== prev.question || $('#answer-1')?.textContent !== prev.a1 ||
      $('#answer-2')?.textContent !== prev.a2;
    const ready = [...document.querySelectorAll('button[data-choice]')].every((b) => !b.disabled);
    return shown($('#question')) && moved && ready;
  }, { question: before.question, a1: before.a1, a2: before.a2 });
  return { resp, after: await view(page) };
}

// The page's own script and form, which the injection checks must not count.
const OWN = ['script[src="/app.js"]', 'form#login-form'];
// mergeDoms(list): one set of injection traces for several looks at the page.
function mergeDoms(list) {
  return {
    pwned: list.find((d) => d.pwned !== 'undefined')?.pwned ?? 'undefined',
    tags: Object.fromEntries(Object.keys(list[0].tags).map((t) => [t, Math.max(...list.map((d) => d.tags[t]))])),
    onAttrs: [...new Set(list.flatMap((d) => d.onAttrs))],
    jsLinks: [...new Set(list.flatMap((d) => d.jsLinks))],
    text: list.map((d) => d.text).join('\n'),
  };
}

const CHOICE_OF_KEY = { 1: 'A', 2: 'B', 3: 'C', 4: 'D', a: 'A', b: 'B', c: 'C', d: 'D', s: 'skip' };
// The model verdict a label stands for: A/B name a position, and shown_order says which model
// was in it (0 = candidate first). METHODS §4: a = candidate better, b = baseline better.
export function modelVerdict(choice, shownOrder) {
  if (choice === 'A') return shownOrder === 0 ? 'a' : 'b';
  if (choice === 'B') return shownOrder === 0 ? 'b' : 'a';
  return choice.toLowerCase();
}

// itemOf(items, question): the hostile items' questions start with "Qnn:".
function itemOf(items, question) {
  const m = /Q(\d\d):/.exec(question ?? '');
  return m ? items[Number(m[1]) - 1] : null;
}

function auditRow(arb, db, judge) {
  const r = run(arb, ['audit', '--db', db, '--json']);
  if (r.code !== 0) throw new Error(`arbiter audit exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout).rows.find((row) => row.judge === judge && row.candidate === MODELS.cand);
}

// ---- the main flow on the hostile store -------------------------------------------------------
export async function annotateFlowTests({ arb, browser, artifacts, hostile, dir }) {
  const { items, answers } = hostile;
  const answerOf = (itemId, model) => answers.find((a) => a.item === itemId && a.model === model).answer;
  const db = copyStore(hostile.sbsDb, dir, 'flow');
  const before = auditRow(arb, db, JUDGES.sbs);
  check('annotate: the store has no labels before (audit n_labelled_items 0)',
    before && (before.human?.n_labelled_items ?? 0) === 0, () => JSON.stringify(before?.human));
  const srv = await startAnnotate(arb, db, dir, 'annotate-flow');
  const { context, page, seen } = await newPage(browser);
  try {
    // Static files and the token on the API.
    for (const f of ['/', '/app.css', '/app.js']) {
      const r = await fetch(srv.url + f);
      check(`annotate: GET ${f} is served (${r.status}, ${r.headers.get('content-type')})`, r.status === 200);
    }
    // Defence in depth behind textContent: a page whose CSP allows inline script would run an
    // injected handler; this one must not.
    const csp = (await fetch(srv.url + '/')).headers.get('content-security-policy') ?? '';
    const scriptSrc = (/(?:^|;)\s*script-src([^;]*)/.exec(csp) ?? /(?:^|;)\s*default-src([^;]*)/.exec(csp) ?? [])[1] ?? null;
    check('annotate: GET / sends a Content-Security-Policy that allows no inline script',
      scriptSrc !== null && !/unsafe-inline|unsafe-eval|\*/.test(scriptSrc), `CSP: ${csp || '(none)'}`);
    const noTok = await fetch(srv.url + '/api/next');
    check(`annotate: GET /api/next without a token is refused (${noTok.status})`, noTok.status === 401 || noTok.status === 403);

    await page.goto(srv.url + '/');
    await page.locator('#login-form').waitFor({ state: 'visible' });
    let v = await view(page);
    check('annotate: the login form shows #token, #annotator and #login',
      await page.locator('#token').isVisible() && await page.locator('#annotator').isVisible() && await page.locator('#login').isVisible());
    check('annotate: no task is shown before logging in', !v.questionShown);
    await page.screenshot({ path: path.join(artifacts, 'annotate-login.png'), fullPage: true });

    const annotator = 'alice "A" <i>x</i>';
    await login(page, srv, srv.token, annotator);
    v = await waitForTask(page);
    check('annotate: logging in through the form shows a task', v.questionShown && !v.loginShown && !v.done,
      () => `error: ${v.error}`);
    await page.screenshot({ path: path.join(artifacts, 'annotate-task.png'), fullPage: true });
    const cookies = await context.cookies(srv.url);
    check('annotate: login set a cookie', cookies.length > 0);
    await page.reload();
    v = await waitForTask(page);
    check('annotate: still logged in after a reload (cookie)', v.questionShown && !v.loginShown);

    // Label everything: every button, then every key; the plan is longer than the work and the
    // loop stops at #done, so a wrong guess about skipping shows as a failed check, not a hang.
    const plan = [
      ...['A', 'B', 'C', 'D', 'skip'].map((c) => ({ kind: 'click', choice: c, name: `click ${c}` })),
      ...['1', '2', '3', '4', 's', 'a', 'b', 'c', 'd'].map((k) => ({ kind: 'key', key: k, choice: CHOICE_OF_KEY[k], name: `key ${k}` })),
      ...Array.from({ length: 10 }, (_, i) => ({ kind: 'click', choice: 'ABCD'[i % 4], name: `click ${'ABCD'[i % 4]}` })),
    ];
    const done = [];
    const problems = { text: [], progress: [], reference: [], answers: [], leak: [] };
    const doms = []; // the DOM's injection traces with each task on screen
    for (const action of plan) {
      if (v.done) break;
      const item = itemOf(items, v.question);
      if (!item) { bad(`annotate: the question shown is one of the store's (${action.name})`, v.question); break; }
      const cand = answerOf(item.id, MODELS.cand), base = answerOf(item.id, MODELS.base);
      const shownOrder = v.a1.trim() === cand.trim() && v.a2.trim() === base.trim() ? 0
        : v.a1.trim() === base.trim() && v.a2.trim() === cand.trim() ? 1 : null;
      if (shownOrder === null) problems.answers.push(`${item.id}: #answer-1 ${JSON.stringify(v.a1)} / #answer-2 ${JSON.stringify(v.a2)}`);
      if (v.question.trim() !== item.question) problems.text.push(`question ${JSON.stringify(v.question)}`);
      if (item.reference ? !(v.referenceShown && v.reference.includes(item.reference)) : v.referenceShown) {
        problems.reference.push(`${item.id}: reference ${item.reference ? 'missing' : 'shown though the item has none'}`);
      }
      if (/7f3a/.test(v.html)) problems.leak.push(`${item.id}: the page holds a model or judge name`);
      doms.push(await hostileDom(page, OWN));
      const p0 = parseProgress(v.progress);
      const { resp, after } = await act(page, action, v);
      const p1 = parseProgress(after.progress);
      if (!resp.ok()) problems.progress.push(`${action.name}: POST /api/label answered ${resp.status()}`);
      if (!p0 || (!after.done && !p1)) problems.progress.push(`${action.name}: progress "${v.progress}" -> "${after.progress}"`);
      else if (p1 && action.choice !== 'skip' && !(p1.labelled === p0.labelled + 1 && p1.left < p0.left)) {
        problems.progress.push(`${action.name}: "${v.progress}" -> "${after.progress}"`);
      } else if (p1 && action.choice === 'skip' && !(p1.labelled === p0.labelled && p1.left <= p0.left)) {
        problems.progress.push(`${action.name}: "${v.progress}" -> "${after.progress}"`);
      }
      done.push({ ...action, item: item.id, shownOrder });
      v = after;
    }
    const labelled = done.filter((d) => d.choice !== 'skip');
    const skipped = done.filter((d) => d.choice === 'skip');
    // A skipped item is not offered to the same annotator again, so the N_ITEMS = 14 tasks take
    // exactly the first 14 actions of the plan: every button and every key once.
    check(`annotate: every button and key (1-4, a-d, s) acted on a task (${done.length} actions)`,
      done.length === N_ITEMS && done.map((d) => d.name).join() === plan.slice(0, N_ITEMS).map((d) => d.name).join(),
      () => done.map((d) => d.name).join(', '));
    check('annotate: the question is shown whole, as text', problems.text.length === 0, () => problems.text.join('\n'));
    check('annotate: the two answers are the pair\'s, whole, as text', problems.answers.length === 0, () => problems.answers.join('\n'));
    check('annotate: #reference shown with the item\'s reference, hidden when there is none',
      problems.reference.length === 0, () => problems.reference.join('\n'));
    check('annotate: #progress counts labels up and tasks left down', problems.progress.length === 0, () => problems.progress.join('\n'));
    check('annotate: no model or judge name anywhere in the page (blind)', problems.leak.length === 0, () => problems.leak.join('\n'));
    const apiLeaks = seen.api.filter((r) => /7f3a/.test(r.body));
    check('annotate: no API answer names a model or judge', apiLeaks.length === 0, () => apiLeaks.map((r) => `${r.url}: ${r.body.slice(0, 300)}`).join('\n'));
    check('annotate: both shown orders occur', done.some((d) => d.shownOrder === 0) && done.some((d) => d.shownOrder === 1));
    check('annotate: #done shows when nothing is left', v.done, () => `progress "${v.progress}", error "${v.error}"`);
    check(`annotate: the done state says 0 left ("${v.progress}")`, !parseProgress(v.progress) || parseProgress(v.progress).left === 0);
    await page.screenshot({ path: path.join(artifacts, 'annotate-done.png'), fullPage: true });
    doms.push(await hostileDom(page, OWN));
    checkHostileDom(`annotate (${doms.length} page states)`, mergeDoms(doms));
    // The page asks GET /api/next before anyone has logged in, and the 401 is how it learns to
    // show the form; Chromium logs that answer as a failed resource, which is not an error.
    const errors = seen.consoleErrors.filter((e) => !/status of 401/.test(e));
    check('annotate: no console errors (but the 401 before logging in)', errors.length === 0, () => errors.join('\n'));
    check('annotate: no uncaught page errors', seen.pageErrors.length === 0, () => seen.pageErrors.join('\n'));

    // What landed in the store.
    const rows = sql(db, 'select item_id, candidate, baseline, verdict, annotator, shown_order, time_ms, source from human_labels');
    check(`annotate: one human_labels row per label (${rows.length} rows, ${labelled.length} labels)`, rows.length === labelled.length);
    const wrong = [];
    for (const d of labelled) {
      const r = rows.find((x) => x.item_id === d.item);
      const want = d.shownOrder === null ? null : modelVerdict(d.choice, d.shownOrder);
      if (!r) { wrong.push(`${d.item}: no row`); continue; }
      if (r.annotator !== annotator) wrong.push(`${d.item}: annotator ${JSON.stringify(r.annotator)}`);
      if (r.source !== 'ui') wrong.push(`${d.item}: source ${r.source}`);
      if (!(r.time_ms > 0)) wrong.push(`${d.item}: time_ms ${r.time_ms}`);
      if (r.candidate !== MODELS.cand || r.baseline !== MODELS.base) wrong.push(`${d.item}: pair ${r.candidate} / ${r.baseline}`);
      if (r.shown_order !== d.shownOrder) wrong.push(`${d.item}: shown_order ${r.shown_order}, the page showed ${d.shownOrder}`);
      if (r.verdict !== want) wrong.push(`${d.item}: ${d.name} with shown_order ${d.shownOrder} stored ${r.verdict}, expected ${want}`);
    }
    check('annotate: each label stored with annotator, source ui, time_ms > 0, its shown_order and the verdict mapped through it',
      wrong.length === 0, () => wrong.join('\n'));
    const outcomes = Object.fromEntries(sql(db, 'select outcome, count(*) n from annotation_tasks where outcome is not null group by outcome').map((r) => [r.outcome, r.n]));
    check(`annotate: annotation_tasks records ${labelled.length} labels and ${skipped.length} skips`,
      (outcomes.label ?? 0) === labelled.length && (outcomes.skip ?? 0) === skipped.length, () => JSON.stringify(outcomes));

    // The audit sees the labels at once, while the server still runs.
    const after = auditRow(arb, db, JUDGES.sbs);
    const items_ = new Set(labelled.map((d) => d.item)).size;
    check(`annotate: arbiter audit --json reports the ${items_} labelled items at once`,
      after && after.human && after.human.n_labelled_items === items_, () => JSON.stringify(after?.human));

    // A clean stop: exit 0 (under the sanitizers, also no leak and no error on the way out).
    const stopped = await srv.kill('SIGTERM', 10000);
    check('annotate: SIGTERM stops the server with exit code 0', stopped.code === 0 && !stopped.timedOut,
      () => `${JSON.stringify(stopped)}\n${fs.readFileSync(srv.log, 'utf8').slice(-1500)}`);
  } finally {
    await context.close();
    await srv.kill('SIGKILL');
  }
}

// ---- wrong token, other ways to give the token, and SIGKILL after a label ----------------------
export async function annotateTokenAndKillTests({ arb, browser, artifacts, hostile, dir }) {
  const db = copyStore(hostile.sbsDb, dir, 'kill');
  const srv = await startAnnotate(arb, db, dir, 'annotate-kill', ['--annotator', 'bob']);
  const { context, page, seen } = await newPage(browser);
  try {
    const wrongToken = srv.token.slice(0, 31) + (srv.token[31] === 'x' ? 'y' : 'x');
    await login(page, srv, wrongToken, 'mallory');
    await page.locator('#error').waitFor({ state: 'visible' });
    const v = await view(page);
    check(`annotate: a wrong token shows an error ("${v.error.slice(0, 60)}")`, v.error !== '' && !v.questionShown);
    await page.screenshot({ path: path.join(artifacts, 'annotate-wrong-token.png'), fullPage: true });
    for (const [how, headers] of [['cookie-less POST', {}], ['Bearer', { Authorization: `Bearer ${wrongToken}` }],
      ['X-Arbiter-Token', { 'X-Arbiter-Token': wrongToken }]]) {
      const r = await fetch(srv.url + '/api/label', { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify({ task: 1, choice: 'A', time_ms: 100 }) });
      check(`annotate: POST /api/label with a wrong token (${how}) is refused (${r.status})`, r.status === 401 || r.status === 403);
    }
    const lr = await fetch(srv.url + '/api/login', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: wrongToken, annotator: 'mallory' }) });
    check(`annotate: POST /api/login with a wrong token is refused (${lr.status})`, lr.status === 401 || lr.status === 403);
    check('annotate: nothing stored after wrong tokens',
      sql(db, 'select count(*) n from human_labels')[0].n === 0 &&
      sql(db, "select count(*) n from annotation_tasks where outcome is not null")[0].n === 0);
    for (const [how, headers] of [['Bearer', { Authorization: `Bearer ${srv.token}` }], ['X-Arbiter-Token', { 'X-Arbiter-Token': srv.token }]]) {
      const r = await fetch(srv.url + '/api/next', { headers });
      check(`annotate: GET /api/next with the token as ${how} is accepted (${r.status})`, r.status === 200);
    }

    await login(page, srv, srv.token, 'carol');
    const task = await waitForTask(page);
    const { resp } = await act(page, { kind: 'click', choice: 'A' }, task);
    check('annotate: the label was accepted', resp.ok(), `status ${resp.status()}`);
    const gone = await srv.kill('SIGKILL');
    check('annotate: server killed with SIGKILL right after the label', gone.sig === 'SIGKILL');
    const rows = sql(db, "select annotator, source, verdict from human_labels");
    check('annotate: the label is in the store after SIGKILL', rows.length === 1 && rows[0].annotator === 'carol' && rows[0].source === 'ui',
      () => JSON.stringify(rows));
    check('annotate: no console errors', seen.consoleErrors.filter((e) => !/status of 40[13]/.test(e)).length === 0,
      () => seen.consoleErrors.join('\n'));
  } finally {
    await context.close();
    await srv.kill('SIGKILL');
  }
}

// ---- two annotators, --overlap 1 --------------------------------------------------------------
export async function annotateOverlapTests({ arb, browser, hostile, dir }) {
  const db = copyStore(hostile.sbsDb, dir, 'overlap');
  const srv = await startAnnotate(arb, db, dir, 'annotate-overlap', ['--overlap', '1']);
  const one = await newPage(browser), two = await newPage(browser);
  try {
    await login(one.page, srv, srv.token, 'ann-one');
    let v1 = await waitForTask(one.page);
    await login(two.page, srv, srv.token, 'ann-two');
    let v2 = await waitForTask(two.page);
    const seenBy = { one: [], two: [] };
    const record = (who, v) => { const it = itemOf(hostile.items, v.question); if (it && !v.done) seenBy[who].push(it.id); };
    record('one', v1); record('two', v2);
    check('annotate --overlap 1: two annotators logged in at once get different items',
      seenBy.one[0] !== undefined && seenBy.two[0] !== undefined && seenBy.one[0] !== seenBy.two[0], () => JSON.stringify(seenBy));
    for (let step = 0; step < 2 * N_ITEMS + 4 && !(v1.done && v2.done); step++) {
      if (!v1.done) { v1 = (await act(one.page, { kind: 'click', choice: 'A' }, v1)).after; record('one', v1); }
      if (!v2.done) { v2 = (await act(two.page, { kind: 'key', key: 'b' }, v2)).after; record('two', v2); }
    }
    const both = seenBy.one.filter((id) => seenBy.two.includes(id));
    check('annotate --overlap 1: both annotators reach #done', v1.done && v2.done);
    check('annotate --overlap 1: no item shown to both annotators', both.length === 0, () => JSON.stringify(both));
    const dup = sql(db, 'select item_id, count(*) n from human_labels group by item_id having count(*) > 1');
    check('annotate --overlap 1: no item labelled twice in the store', dup.length === 0, () => JSON.stringify(dup));
    const n = sql(db, 'select count(distinct item_id) n from human_labels')[0].n;
    check(`annotate --overlap 1: every item labelled once (${n} of ${N_ITEMS})`, n === N_ITEMS);
    const who = sql(db, 'select annotator, count(*) n from human_labels group by annotator order by annotator');
    check('annotate --overlap 1: both annotators labelled some', who.length === 2 && who.every((r) => r.n > 0), () => JSON.stringify(who));
  } finally {
    await one.context.close();
    await two.context.close();
    await srv.kill('SIGKILL');
  }
}

// ---- the demo store: real questions, and no model name ever shown ------------------------------
export async function annotateDemoTests({ arb, browser, artifacts, demoDb, dir }) {
  const db = copyStore(demoDb, dir, 'demo-annotate');
  // The demo's three synthetic annotators have labelled its pairs already: a fourth may.
  const srv = await startAnnotate(arb, db, dir, 'annotate-demo', ['--annotator', 'dora', '--overlap', '4']);
  const { context, page, seen } = await newPage(browser);
  try {
    await login(page, srv, srv.token, 'dora');
    let v = await waitForTask(page);
    const questions = new Set(sql(db, 'select question from items').map((r) => r.question.trim()));
    const leaks = [], unknown = [];
    let shown = 0;
    for (const key of ['1', '3', 's', '2']) {
      if (v.done) break;
      shown++;
      if (!questions.has((v.question ?? '').trim())) unknown.push(v.question);
      for (const m of DEMO_MODELS) if (v.html.includes(m)) leaks.push(`${m} in the page`);
      v = (await act(page, { kind: 'key', key }, v)).after;
    }
    for (const r of seen.api) for (const m of DEMO_MODELS) if (r.body.includes(m)) leaks.push(`${m} in ${r.url}`);
    await page.screenshot({ path: path.join(artifacts, 'annotate-demo-task.png'), fullPage: true });
    check(`annotate (demo store): 4 tasks shown (${shown})`, shown === 4);
    check('annotate (demo store): the questions shown are the demo\'s', unknown.length === 0, () => unknown.join('\n'));
    check('annotate (demo store): no model name in the page or the API answers', leaks.length === 0, () => [...new Set(leaks)].join('\n'));
    const rows = sql(db, "select count(*) n from human_labels where source = 'ui' and annotator = 'dora'")[0].n;
    check(`annotate (demo store): 3 labels stored (${rows})`, rows === 3);
  } finally {
    await context.close();
    await srv.kill('SIGKILL');
  }
}

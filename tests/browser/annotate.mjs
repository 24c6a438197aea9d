// annotate.mjs -- browser tests of `arbiter annotate`, the labelling web app: logging in through
// the form, labelling by clicks and by keys, the progress line and the done state, blind
// labelling (no model name in the page or in the API's answers), answers rendered as text, what
// lands in human_labels and annotation_tasks (verdicts mapped through the shown order), a wrong
// token, two annotators with --overlap 1, `arbiter audit` seeing the labels at once, a label
// surviving SIGKILL of the server, and the page when the server fails it (a 503 or no answer to
// GET /api/next shows the error and #retry instead of a task; a 503 to a verdict leaves the task
// to be answered again; a 409 says "this is the next task" only when one loaded).
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
  // a wait, not a timed check: on a loaded machine the demo report's full-page screenshot
  // took over 15 s (57 charts); a page that never gets there still fails, later
  page.setDefaultTimeout(120000);
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
      taskViewShown: shown($('#task-view')),
      retryShown: shown($('#retry')),
      buttonsShown: [...document.querySelectorAll('button[data-choice]')].filter(shown).length,
      buttonsEnabled: [...document.querySelectorAll('button[data-choice]')].every((b) => !b.disabled),
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
  posted.catch(() => {}); // when the click itself fails, that is the error to report, not this
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

// until(page, fn, arg, ms): page.waitForFunction, but a time-out answers false instead of
// throwing, so a page that never gets there is one FAIL line (with its view), not an exception
// that ends the group.
async function until(page, fn, arg, ms = 60000) {
  try {
    await page.waitForFunction(fn, arg, { timeout: ms });
    return true;
  } catch (e) {
    if (e && e.name === 'TimeoutError') return false;
    throw e;
  }
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

// shownOrderOf(hostile, item, v): which answer the page shows first, from their texts: 0 the
// candidate's, 1 the baseline's, null when the two shown are not the pair's.
function shownOrderOf({ answers }, item, v) {
  const answerOf = (model) => answers.find((a) => a.item === item.id && a.model === model).answer.trim();
  const cand = answerOf(MODELS.cand), base = answerOf(MODELS.base);
  if (v.a1.trim() === cand && v.a2.trim() === base) return 0;
  if (v.a1.trim() === base && v.a2.trim() === cand) return 1;
  return null;
}

function auditRow(arb, db, judge) {
  const r = run(arb, ['audit', '--db', db, '--json']);
  if (r.code !== 0) throw new Error(`arbiter audit exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout).rows.find((row) => row.judge === judge && row.candidate === MODELS.cand);
}

// ---- the main flow on the hostile store -------------------------------------------------------
export async function annotateFlowTests({ arb, browser, artifacts, hostile, dir }) {
  const { items } = hostile;
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
      const shownOrder = shownOrderOf(hostile, item, v);
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

// ---- a busy or unreachable server: #retry, and no verdict lost ---------------------------------
// page.route stands in for the server's failures: a 503 (database busy) or a dropped connection
// (route.abort) on GET /api/next, a 503 on POST /api/label. A real 409 comes from answering the
// task on screen in a second tab of the same annotator. Five tasks of the 14 are used.
const BUSY = { status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'database busy (injected by the test)' }) };
const isLabelPost = (r) => r.method() === 'POST' && r.url().endsWith('/api/label');

export async function annotateRecoveryTests({ arb, browser, artifacts, hostile, dir }) {
  const db = copyStore(hostile.sbsDb, dir, 'recovery');
  const srv = await startAnnotate(arb, db, dir, 'annotate-recovery');
  const { context, page, seen } = await newPage(browser);
  const itemIdOf = (v) => itemOf(hostile.items, v.question)?.id ?? null;
  const labelsOf = (itemId) => sql(db, `select verdict, annotator, shown_order, time_ms from human_labels where item_id = '${itemId.replace(/'/g, "''")}'`);
  const nLabels = () => sql(db, 'select count(*) n from human_labels')[0].n;
  let labelPosts = 0; // every POST /api/label the page sends, answered by the server or by a route
  page.on('request', (r) => { if (isLabelPost(r)) labelPosts++; });
  // failNext(how): only the next GET /api/next fails: '503', or 'abort' (no answer at all).
  const failNext = (how) => page.route('**/api/next', (route) => (how === 'abort' ? route.abort() : route.fulfill(BUSY)), { times: 1 });
  // click(choice): a verdict button, as a person (time_ms > 0); resolves to the POST's answer.
  const click = async (choice) => {
    const posted = page.waitForResponse((r) => isLabelPost(r.request()));
    posted.catch(() => {}); // when the click itself fails, that is the error to report
    await sleep(30);
    await page.click(`button[data-choice="${choice}"]`);
    return posted;
  };
  // answerInOtherTab(choice, v): the same annotator answers the task on screen (v) in a second
  // tab, so the page's own verdict on it gets the server's 409.
  const answerInOtherTab = async (choice, v) => {
    const tab = await context.newPage();
    try {
      await tab.goto(srv.url + '/');
      const tv = await waitForTask(tab);
      const { resp } = await act(tab, { kind: 'click', choice }, tv);
      return { same: tv.question === v.question, status: resp.status() };
    } finally {
      await tab.close();
    }
  };
  // checkFailed(name, cause): the page shows the failure (#error with CAUSE in it, #retry ready)
  // and no task: no verdict button on screen, and neither key 1 nor a script's click on the
  // hidden button A sends a label.
  const checkFailed = async (name, cause) => {
    const came = await until(page, (c) => {
      const retry = document.querySelector('#retry'), error = document.querySelector('#error');
      return retry.getClientRects().length > 0 && !retry.disabled && !error.hidden && error.textContent.includes(c);
    }, cause);
    const v = await view(page);
    check(`annotate (${name}): the error ("${cause}") and #retry show`, came && v.retryShown && v.error.includes(cause),
      () => `error "${v.error}", #retry ${v.retryShown ? 'shown' : 'hidden'}`);
    check(`annotate (${name}): no task and no verdict button on screen`,
      !v.taskViewShown && !v.questionShown && v.buttonsShown === 0,
      () => `#task-view ${v.taskViewShown ? 'shown' : 'hidden'}, ${v.buttonsShown} verdict buttons shown`);
    const posts = labelPosts, rows = nLabels();
    await page.keyboard.press('1');
    await page.evaluate(() => document.querySelector('button[data-choice="A"]').click());
    await sleep(300);
    check(`annotate (${name}): key 1 and a click on the hidden button A send no label`,
      labelPosts === posts && nLabels() === rows, () => `${labelPosts - posts} POST /api/label sent, ${nLabels() - rows} rows stored`);
    return v;
  };
  // retryShowsTask(name): clicks #retry (the server answers again) and checks that a task shows,
  // with its verdict buttons usable and no error left.
  const retryShowsTask = async (name) => {
    await page.click('#retry');
    const came = await until(page, () => {
      const q = document.querySelector('#question');
      return q.getClientRects().length > 0 && q.textContent.trim() !== '' &&
        [...document.querySelectorAll('button[data-choice]')].every((b) => !b.disabled);
    });
    const v = await view(page);
    check(`annotate (${name}): #retry shows a task, its 5 verdict buttons usable, #retry and the error gone`,
      came && v.questionShown && itemIdOf(v) !== null && v.buttonsShown === 5 && v.buttonsEnabled && !v.retryShown && v.error === '',
      () => `question ${JSON.stringify((v.question ?? '').slice(0, 60))}, ${v.buttonsShown} buttons, #retry ${v.retryShown ? 'shown' : 'hidden'}, error "${v.error}"`);
    return v;
  };

  try {
    // 1. The first task after logging in cannot be loaded: 503, then a dropped connection on
    //    the first #retry; the second #retry gets it. (The route goes in after the form shows,
    //    so the page's first GET /api/next, the 401 that shows the form, is the server's.)
    await page.goto(srv.url + '/');
    await page.locator('#login-form').waitFor({ state: 'visible' });
    await failNext('503');
    await page.fill('#token', srv.token);
    await page.fill('#annotator', 'erin');
    await page.click('#login');
    await checkFailed('GET /api/next answers 503 after logging in', 'database busy (injected by the test)');
    await page.screenshot({ path: path.join(artifacts, 'annotate-retry.png'), fullPage: true });
    await failNext('abort');
    await page.click('#retry');
    await checkFailed('#retry, and GET /api/next gets no answer', 'cannot reach the server');
    let v = await retryShowsTask('#retry, and the server answers');

    // 2. A verdict is stored, then the next task cannot be loaded: the answered task must leave
    //    the screen with its buttons.
    const first = itemIdOf(v);
    await failNext('503');
    const r1 = await click('A');
    check(`annotate (503 on the task after a verdict): the verdict is stored (${r1.status()})`,
      r1.status() === 200 && labelsOf(first).length === 1, () => JSON.stringify(labelsOf(first)));
    await checkFailed('503 on the task after a verdict', 'database busy (injected by the test)');
    v = await retryShowsTask('503 on the task after a verdict');
    check('annotate (503 on the task after a verdict): #retry brings the next task, not the one answered',
      itemIdOf(v) !== first, () => `${first} again`);

    // 3. POST /api/label answers 503: the task stays to be answered again, and the second click
    //    stores it, once.
    const second = itemIdOf(v), shownOrder = shownOrderOf(hostile, itemOf(hostile.items, v.question), v);
    await page.route('**/api/label', (route) => route.fulfill(BUSY), { times: 1 });
    const rows = nLabels();
    const r2 = await click('B');
    const settled = await until(page, () => !document.querySelector('#error').hidden &&
      [...document.querySelectorAll('button[data-choice]')].every((b) => !b.disabled));
    const kept = await view(page);
    check(`annotate (POST /api/label answers ${r2.status()}): the same task stays, its verdict buttons usable`,
      r2.status() === 503 && settled && kept.question === v.question && kept.a1 === v.a1 && kept.a2 === v.a2 &&
        kept.buttonsShown === 5 && kept.buttonsEnabled && !kept.retryShown,
      () => `question now ${JSON.stringify((kept.question ?? '').slice(0, 60))}, ${kept.buttonsShown} buttons shown, enabled ${kept.buttonsEnabled}, #retry ${kept.retryShown ? 'shown' : 'hidden'}`);
    check('annotate (POST /api/label answers 503): the error says the verdict was not saved',
      /not saved/.test(kept.error) && kept.error.includes('database busy'), () => `error "${kept.error}"`);
    check('annotate (POST /api/label answers 503): nothing stored', nLabels() === rows);
    // A page that cannot take the verdict again is one FAIL line here, not a time-out later.
    const again = await act(page, { kind: 'click', choice: 'B' }, kept).catch((e) => {
      if (e && e.name === 'TimeoutError') return null;
      throw e;
    });
    v = again ? again.after : await view(page);
    const stored = labelsOf(second);
    check(`annotate (POST /api/label answers 503): the second click is stored (${again?.resp.status() ?? 'no answer'}) and the next task shows`,
      again && again.resp.status() === 200 && v.questionShown && itemIdOf(v) !== second && v.error === '',
      () => `error "${v.error}"`);
    check('annotate (POST /api/label answers 503): one row for the task, by erin, the verdict mapped through its shown_order, time_ms > 0',
      shownOrder !== null && stored.length === 1 && stored[0].annotator === 'erin' && stored[0].shown_order === shownOrder &&
        stored[0].verdict === modelVerdict('B', shownOrder) && stored[0].time_ms > 0 && nLabels() === rows + 1,
      () => `shown order ${shownOrder}: ${JSON.stringify(stored)}`);

    // 4. A 409 (answered in another tab) and the next task loads: the page says so.
    const third = itemIdOf(v);
    const o3 = await answerInOtherTab('C', v);
    check(`annotate (409 on a verdict): the other tab answered the same task (${o3.status})`, o3.same && o3.status === 200);
    const { resp: r3, after } = await act(page, { kind: 'click', choice: 'A' }, v);
    v = after;
    check(`annotate (409 on a verdict): the answer is ${r3.status()}, the next task shows and the error says "this is the next task"`,
      r3.status() === 409 && v.questionShown && itemIdOf(v) !== third && v.buttonsEnabled &&
        v.error.includes('already answered') && v.error.includes('this is the next task'),
      () => `error "${v.error}"`);
    const answered = labelsOf(third);
    check('annotate (409 on a verdict): only the other tab\'s verdict is stored',
      answered.length === 1 && answered[0].verdict === 'c', () => JSON.stringify(answered));

    // 5. A 409, and then the next task cannot be loaded: no "this is the next task", but #retry.
    const fourth = itemIdOf(v);
    const o4 = await answerInOtherTab('D', v);
    check(`annotate (409, then 503 on the next task): the other tab answered the same task (${o4.status})`, o4.same && o4.status === 200);
    await failNext('503');
    const r4 = await click('A');
    check(`annotate (409, then 503 on the next task): the verdict is refused (${r4.status()})`, r4.status() === 409);
    const failed = await checkFailed('409, then 503 on the next task', 'already answered');
    check('annotate (409, then 503 on the next task): the error gives both causes and does not say "this is the next task"',
      !failed.error.includes('this is the next task') && failed.error.includes('could not be loaded') && failed.error.includes('database busy'),
      () => `error "${failed.error}"`);
    v = await retryShowsTask('409, then 503 on the next task');
    check('annotate (409, then 503 on the next task): #retry brings a task not yet answered',
      itemIdOf(v) !== fourth && labelsOf(itemIdOf(v) ?? '').length === 0, () => `${itemIdOf(v)}`);

    // The failures above are logged by Chromium as failed resources; nothing else may be.
    const errors = seen.consoleErrors.filter((e) => !/status of (401|409|503)|net::ERR_FAILED/.test(e));
    check('annotate (server failures): no console errors but the failed requests', errors.length === 0, () => errors.join('\n'));
    check('annotate (server failures): no uncaught page errors', seen.pageErrors.length === 0, () => seen.pageErrors.join('\n'));
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

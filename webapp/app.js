/*
** app.js -- the behaviour of the annotation page (METHODS 4: human labels collected blind).
**
** Asks the server for the next task (GET /api/next), shows the question, the reference when
** there is one, and the two answers in the order the server recorded, and sends the verdict
** (POST /api/label) with the time from showing the task to the click. A 401 shows the sign-in
** form (POST /api/login sets the cookies). Keyboard: 1/a, 2/b, 3/c, 4/d, s. Every POST is sent
** as Content-Type: application/json (the server refuses anything else).
**
** Invariants: model outputs and questions are untrusted text and are only ever written with
** textContent, never as HTML; the page never learns which model wrote which answer; one
** verdict is in flight at a time (buttons disabled, key repeat ignored), so a double press
** cannot label the next task by accident; verdict buttons are only on screen with the task they
** answer: when the next task cannot be loaded (server busy or unreachable) the task view is
** hidden and the error shows with a #retry button. A verdict the server did not store (busy,
** unreachable) leaves its task on screen to be given again. No external resources, no inline
** code.
*/
'use strict';

(function () {
  const byId = (id) => document.getElementById(id);
  const el = {
    progress: byId('progress'),
    error: byId('error'),
    loginForm: byId('login-form'),
    token: byId('token'),
    annotator: byId('annotator'),
    taskView: byId('task-view'),
    question: byId('question'),
    reference: byId('reference'),
    answer1: byId('answer-1'),
    answer2: byId('answer-2'),
    done: byId('done'),
    retry: byId('retry'),
    buttons: Array.from(document.querySelectorAll('button[data-choice]')),
  };

  /* Keyboard shortcuts: key (lower case) -> choice sent to the server. */
  const KEYS = {
    '1': 'A', a: 'A',
    '2': 'B', b: 'B',
    '3': 'C', c: 'C',
    '4': 'D', d: 'D',
    s: 'skip',
  };
  const MAX_TIME_MS = 86400000;

  let task = null; /* {id, shownAt} of the task on screen */
  let busy = false;
  let loadError = ''; /* why the last loadNext failed */

  function showError(message) {
    el.error.textContent = message || '';
    el.error.hidden = !message;
  }

  function showView(view) {
    el.loginForm.hidden = view !== 'login';
    el.taskView.hidden = view !== 'task';
    el.done.hidden = view !== 'done';
    el.retry.hidden = view !== 'failed';
  }

  function setBusy(on) {
    busy = on;
    for (const b of el.buttons) b.disabled = on;
  }

  function setProgress(p) {
    if (!p) return;
    el.progress.textContent = `${p.labelled} labelled · ${p.remaining} left`;
  }

  /* One request to the API. Resolves to {status, data}; status 0 when the server is unreachable. */
  async function api(method, path, body) {
    const options = { method, headers: {}, credentials: 'same-origin', cache: 'no-store' };
    if (body !== undefined) {
      options.headers['Content-Type'] = 'application/json';
      options.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, options);
    } catch (e) {
      return { status: 0, data: { error: 'cannot reach the server (is arbiter annotate still running?)' } };
    }
    let data = {};
    try {
      data = await res.json();
    } catch (e) {
      data = {};
    }
    return { status: res.status, data: data || {} };
  }

  function errorText(r) {
    return (r.data && typeof r.data.error === 'string' && r.data.error) ||
      `the server answered HTTP ${r.status}`;
  }

  function showLogin(message) {
    task = null;
    showView('login');
    showError(message || '');
    el.token.focus();
  }

  /* No task on screen: the error and a button to try loading again. */
  function showFailure(message) {
    task = null;
    showView('failed');
    showError(message);
  }

  /* Fetches and shows the next task (or the sign-in form, or the end). Returns what is on
  ** screen then: 'task', 'done', 'login', or 'failed' (the error and #retry; why in loadError). */
  async function loadNext() {
    const r = await api('GET', '/api/next');
    if (r.status === 401) { showLogin(''); return 'login'; }
    if (r.status === 400) { showLogin(errorText(r)); return 'login'; } /* no annotator name yet */
    const d = r.data;
    if (r.status !== 200 || !(d.done || (Number.isInteger(d.task) && Array.isArray(d.answers)))) {
      loadError = errorText(r);
      showFailure(`The next task could not be loaded: ${loadError}`);
      return 'failed';
    }
    showError('');
    setProgress(r.data.progress);
    if (r.data.done) {
      task = null;
      showView('done');
      return 'done';
    }
    el.question.textContent = r.data.question;
    const ref = r.data.reference;
    el.reference.textContent = typeof ref === 'string' ? ref : '';
    el.reference.hidden = typeof ref !== 'string';
    el.answer1.textContent = r.data.answers[0];
    el.answer2.textContent = r.data.answers[1];
    showView('task');
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    window.scrollTo(0, 0);
    setBusy(false);
    task = { id: r.data.task, shownAt: performance.now() };
    return 'task';
  }

  /* Sends the verdict for the task on screen, then shows the next one. */
  async function answer(choice) {
    if (!task || busy) return;
    setBusy(true);
    const elapsed = Math.round(performance.now() - task.shownAt);
    const timeMs = Math.min(MAX_TIME_MS, Math.max(0, elapsed));
    const r = await api('POST', '/api/label', { task: task.id, choice, time_ms: timeMs });
    if (r.status === 401) {
      setBusy(false);
      return showLogin('Your session ended: sign in again (your last answer was not saved).');
    }
    if (r.status === 200) {
      setProgress(r.data.progress);
      task = null;
      await loadNext(); /* a failure shows itself, with #retry */
      setBusy(false);
      return;
    }
    if (r.status === 404 || r.status === 409) {
      /* The task is gone (lease given to someone else) or was answered in another tab. */
      const message = errorText(r);
      task = null;
      const next = await loadNext();
      setBusy(false);
      if (next === 'task') showError(`${message}; this is the next task.`);
      else if (next === 'done') showError(`${message}.`);
      else if (next === 'failed') showFailure(`${message}. The next task could not be loaded: ${loadError}`);
      return;
    }
    setBusy(false); /* keep the task on screen so the verdict can be given again */
    showError(`${errorText(r)} (your answer was not saved: give it again)`);
  }

  el.loginForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { token: el.token.value.trim() };
    const name = el.annotator.value.trim();
    if (name) body.annotator = name;
    const r = await api('POST', '/api/login', body);
    if (r.status !== 200) {
      showError(r.status === 401 ? 'Wrong token.' : errorText(r));
      return;
    }
    el.token.value = '';
    showError('');
    await loadNext();
  });

  for (const b of el.buttons) {
    b.addEventListener('click', () => answer(b.getAttribute('data-choice')));
  }

  el.retry.addEventListener('click', async () => {
    if (el.retry.disabled) return;
    el.retry.disabled = true;
    await loadNext();
    el.retry.disabled = false;
  });

  document.addEventListener('keydown', (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing || ev.repeat) return;
    const target = ev.target;
    if (target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' ||
                   target.tagName === 'SELECT' || target.isContentEditable)) return;
    if (el.taskView.hidden || !task) return;
    const choice = KEYS[String(ev.key).toLowerCase()];
    if (!choice) return;
    ev.preventDefault();
    answer(choice);
  });

  loadNext();
})();

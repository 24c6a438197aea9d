// lib.mjs -- what the browser tests share: ok/FAIL counting in the e2e scripts' format, scratch
// directories and child processes that are cleaned up on any exit, running arbiter and sqlite3,
// starting arbiter's servers on a free port, and launching the Debian Chromium headless.
// Invariants: every process started here is killed and every scratch directory removed when the
// runner exits, whether it passed, failed, threw or was interrupted. Nothing here reaches the
// network beyond 127.0.0.1. It does NOT know what the report or the web app look like: that is in
// report.mjs and annotate.mjs.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// ---- ok/FAIL lines ---------------------------------------------------------------------------
let passed = 0, failed = 0;
export function ok(name) { passed++; console.log(`ok   - ${name}`); }
export function bad(name, detail) {
  failed++;
  console.log(`FAIL - ${name}`);
  if (detail !== undefined && detail !== '') {
    for (const line of String(detail).split('\n').slice(0, 12)) console.log(`       ${line}`);
  }
}
// check(name, cond, detail): detail may be a function, evaluated only on failure.
export function check(name, cond, detail) {
  if (cond) ok(name); else bad(name, typeof detail === 'function' ? detail() : detail);
  return !!cond;
}
export function tally() { return { passed, failed }; }

// section(name, fn): runs one group of checks; an exception is one FAIL line, not the end of the
// run, so the other groups still report.
export async function section(name, fn) {
  console.log(`# ${name}`);
  try { await fn(); } catch (e) { bad(`${name}: no exception`, e && e.stack ? e.stack : String(e)); }
}

// ---- cleanup ----------------------------------------------------------------------------------
const children = new Set();
const scratch = new Set();
const closers = new Set();
function cleanupSync() {
  for (const c of children) { try { c.kill('SIGKILL'); } catch { /* already gone */ } }
  children.clear();
  for (const d of scratch) { try { fs.rmSync(d, { recursive: true, force: true }); } catch { /* best effort */ } }
  scratch.clear();
}
process.on('exit', cleanupSync);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => { console.log(`interrupted (${sig})`); process.exit(130); });
}
// closeAll: asynchronous closers (browsers) first, then the synchronous part.
export async function closeAll() {
  for (const f of closers) { try { await f(); } catch { /* best effort */ } }
  closers.clear();
  cleanupSync();
}

export function tempDir(tag) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `arb-browser-${tag}-`));
  scratch.add(d);
  return d;
}

// ---- processes --------------------------------------------------------------------------------
// run(cmd, args, opts): runs to completion; returns {code, stdout, stderr}; never throws for a
// non-zero exit (callers check the code), only for a time-out.
export function run(cmd, args, opts = {}) {
  try {
    const stdout = execFileSync(cmd, args, {
      encoding: 'utf8', timeout: opts.timeout ?? 60000, input: opts.input ?? '',
      stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20, env: opts.env ?? process.env,
    });
    return { code: 0, stdout, stderr: '' };
  } catch (e) {
    if (e.code === 'ETIMEDOUT') throw new Error(`${cmd} ${args.join(' ')}: timed out`);
    if (typeof e.status !== 'number') throw e;
    return { code: e.status, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

// mustRun: run, throwing with the command's stderr when it fails (for set-up steps).
export function mustRun(cmd, args, opts = {}) {
  const r = run(cmd, args, opts);
  if (r.code !== 0) {
    throw new Error(`${path.basename(cmd)} ${args.slice(0, 2).join(' ')} exited ${r.code}: ${r.stderr.slice(0, 2000)}`);
  }
  return r;
}

// sql(db, query): rows as objects, through the sqlite3 command-line shell.
export function sql(db, query) {
  const out = mustRun('sqlite3', ['-json', db, query]).stdout.trim();
  return out === '' ? [] : JSON.parse(out);
}

// startServer(cmd, args, dir, name): starts a server that writes its port to a --port-file
// (args must contain the placeholder '{port-file}'), waits for it, and returns
// {port, proc, log, kill()}. stderr and stdout go to DIR/NAME.log.
export async function startServer(cmd, args, dir, name) {
  const portFile = path.join(dir, `${name}.port`);
  const logFile = path.join(dir, `${name}.log`);
  fs.rmSync(portFile, { force: true });
  const fd = fs.openSync(logFile, 'w');
  const proc = spawn(cmd, args.map((a) => (a === '{port-file}' ? portFile : a)),
    { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  children.add(proc);
  let exited = null;
  proc.on('exit', (code, sig) => { exited = { code, sig }; children.delete(proc); });
  const deadline = Date.now() + 15000;
  for (;;) {
    if (exited) throw new Error(`${name} exited (${exited.code ?? exited.sig}) before listening: ${fs.readFileSync(logFile, 'utf8').slice(0, 2000)}`);
    const text = fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8').trim() : '';
    if (/^\d+$/.test(text)) {
      return {
        port: Number(text), proc, log: logFile,
        exited: () => exited,
        // kill(sig, ms): sends the signal and waits for the process to be gone; after ms it
        // sends SIGKILL and says so (timedOut).
        kill: async (sig = 'SIGKILL', ms = 5000) => {
          if (exited) return exited;
          const gone = new Promise((resolve) => proc.once('exit', (code, s) => resolve({ code, sig: s })));
          proc.kill(sig);
          let timer;
          const late = new Promise((resolve) => { timer = setTimeout(() => resolve(null), ms); });
          const r = await Promise.race([gone, late]);
          clearTimeout(timer);
          if (r) return r;
          proc.kill('SIGKILL');
          return { ...(await gone), timedOut: true };
        },
      };
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${name} wrote no port within 15 s: ${fs.readFileSync(logFile, 'utf8').slice(0, 2000)}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

// ---- the browser ------------------------------------------------------------------------------
const CHROMIUM = process.env.ARB_CHROMIUM || '/usr/bin/chromium';
// The machine has no network: without these flags Chromium keeps trying to reach Google's hosts.
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launchBrowser(chromium) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  closers.add(() => browser.close());
  return browser;
}

// watchPage(page): collects what a page should never do: console errors, uncaught exceptions,
// failed requests. Returns the live lists.
export function watchPage(page) {
  const seen = { consoleErrors: [], pageErrors: [], failedRequests: [], requests: [] };
  page.on('console', (m) => { if (m.type() === 'error') seen.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => seen.pageErrors.push(String(e)));
  page.on('requestfailed', (r) => seen.failedRequests.push(`${r.url()} (${r.failure()?.errorText})`));
  page.on('request', (r) => seen.requests.push(r.url()));
  return seen;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

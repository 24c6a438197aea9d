// run.mjs -- runs every browser test of arbiter in headless Chromium and prints one ok/FAIL line
// per check, then "N passed, N failed" (the e2e scripts' format).
//   node tests/browser/run.mjs path/to/arbiter [SECTION-SUBSTRING]
// Environment: ARB_ARTIFACTS, where screenshots, the PDF and the reports go (default: the
// arbiter binary's directory/browser-artifacts); ARB_BROWSER_REQUIRED=1 turns missing
// dependencies (playwright-core, Chromium, sqlite3) into a failure instead of a skip;
// ARB_CHROMIUM, the browser (default /usr/bin/chromium).
// Exit codes: 0 all passed, 1 a check failed, 2 usage, 77 skipped (dependencies missing; ctest's
// SKIP_RETURN_CODE). Servers and scratch directories are removed on every exit.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bad, closeAll, launchBrowser, mustRun, section, tally, tempDir } from './lib.mjs';
import { buildHostileStores } from './hostile.mjs';
import { demoReportTests, hostileReportTests } from './report.mjs';
import {
  annotateFlowTests, annotateTokenAndKillTests, annotateRecoveryTests, annotateOverlapTests,
  annotateDemoTests,
} from './annotate.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const started = Date.now();
const WATCHDOG_S = 240;

async function main() {
  const [arbArg, only] = process.argv.slice(2);
  if (!arbArg) { console.error('usage: node tests/browser/run.mjs path/to/arbiter [SECTION-SUBSTRING]'); return 2; }
  const arb = path.resolve(arbArg);
  try { fs.accessSync(arb, fs.constants.X_OK); } catch { console.error(`run.mjs: ${arb} is not an executable`); return 2; }

  // Dependencies: a skip outside `make test`, a failure inside it.
  const missing = [];
  let chromium;
  try { ({ chromium } = await import(path.join(here, 'node_modules/playwright-core/index.mjs'))); } catch {
    missing.push(`playwright-core (run: cd ${here} && npm ci)`);
  }
  const browserPath = process.env.ARB_CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(browserPath)) missing.push(`${browserPath} (Debian package chromium)`);
  try { mustRun('sqlite3', ['-version']); } catch { missing.push('sqlite3 (Debian package sqlite3)'); }
  if (missing.length) {
    const msg = `browser tests need: ${missing.join('; ')} (or: ARB_BROWSER_DEPS=1 bash scripts/install-deps.sh)`;
    if (process.env.ARB_BROWSER_REQUIRED === '1') { bad('browser test dependencies present', msg); return 1; }
    console.log(`SKIP: ${msg}`);
    return 77;
  }

  const artifacts = path.resolve(process.env.ARB_ARTIFACTS || path.join(path.dirname(arb), 'browser-artifacts'));
  fs.mkdirSync(artifacts, { recursive: true });
  const dir = tempDir('run');

  console.log('# stores: the demo and a hostile store');
  const demoDir = path.join(dir, 'demo');
  mustRun(arb, ['demo', '--out', demoDir], { timeout: 120000 });
  const demoDb = path.join(demoDir, 'demo.db');
  const hostileDir = path.join(dir, 'hostile');
  fs.mkdirSync(hostileDir);
  const hostile = await buildHostileStores(arb, hostileDir);
  const browser = await launchBrowser(chromium);
  const ctx = { arb, browser, artifacts, demoDb, hostile, hostileDb: hostile.fullDb, dir };

  const groups = [
    ['report: the demo store', demoReportTests],
    ['report: a hostile store', hostileReportTests],
    ['annotate: labelling a hostile store', annotateFlowTests],
    ['annotate: tokens and SIGKILL', annotateTokenAndKillTests],
    ['annotate: a busy or unreachable server (#retry)', annotateRecoveryTests],
    ['annotate: two annotators, --overlap 1', annotateOverlapTests],
    ['annotate: the demo store', annotateDemoTests],
  ];
  for (const [name, fn] of groups) {
    if (only && !name.includes(only)) continue;
    await section(name, () => fn(ctx));
  }
  console.log(`browser artifacts (screenshots, PDF, reports): ${artifacts}`);
  return tally().failed === 0 ? 0 : 1;
}

const watchdog = setTimeout(async () => {
  bad(`browser tests finish within ${WATCHDOG_S} s`, 'stopped by the watchdog');
  const { passed, failed } = tally();
  console.log(`${passed} passed, ${failed} failed`);
  await closeAll();
  process.exit(1);
}, WATCHDOG_S * 1000);

let code;
try {
  code = await main();
} catch (e) {
  bad('browser tests set up', e && e.stack ? e.stack : String(e));
  code = 1;
}
clearTimeout(watchdog);
await closeAll();
if (code === 0 || code === 1) {
  const { passed, failed } = tally();
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
  console.log(`${passed} passed, ${failed} failed`);
}
process.exit(code);

// hostile.mjs -- builds stores whose every user-controlled string is an attempt at markup or
// script injection: questions, references, categories, item ids, answers, model names, judge
// names and annotator names. The stores are made the way users make theirs: items and answers
// JSONL files, `arbiter sim-server` as the judge over real HTTP, `arbiter sbs`, `arbiter
// tournament`, `arbiter discuss` and `arbiter labels import`.
// Invariants: every hostile string, if it were ever parsed as HTML or SVG, sets
// window.__pwned or leaves an element (img, script, iframe, an on* attribute, a javascript: link)
// that the tests look for. Model and judge names carry a marker (7f3a) that no answer or question
// holds, so a test can tell a leaked name from an answer's text. Names avoid ',' and ':', which
// the command lines use as separators (they are not what is tested here).
// It does NOT check anything: report.mjs and annotate.mjs do.
import fs from 'node:fs';
import path from 'node:path';
import { mustRun, startServer, sql } from './lib.mjs';

export const PAYLOADS = [
  '<script>window.__pwned=1</script>',
  '"><img src=x onerror="window.__pwned=1">',
  '</svg><svg onload="window.__pwned=1">',
  '<a href="javascript:window.__pwned=1">x</a>',
  '</title></text><script>window.__pwned=1</script>',
  "' onmouseover='window.__pwned=1' x='",
  '--><script>window.__pwned=1</script><!--',
  ']]><img src=x onerror="window.__pwned=1">',
  '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
  '<meta http-equiv="refresh" content="0;url=javascript:window.__pwned=1">',
  '</style><style>*{display:none!important}</style>',
  '&lt;b&gt;already escaped&lt;/b&gt; &amp; an ampersand',
];

export const MODELS = {
  cand: 'model-CAND-7f3a"><img src=x onerror="window.__pwned=1">',
  base: 'model-BASE-7f3a</svg><svg onload="window.__pwned=1">',
  third: 'model-THIRD-7f3a<script>window.__pwned=1</script>',
};
export const NAME_MARKERS = ['model-CAND-7f3a', 'model-BASE-7f3a', 'model-THIRD-7f3a'];
export const JUDGES = {
  sbs: 'judge-S-7f3a<a href="javascript:window.__pwned=1">x</a>',
  a: 'judge-A-7f3a<script>window.__pwned=1</script>',
  b: 'judge-B-7f3a"><img src=x onerror="window.__pwned=1">',
};
export const ANNOTATOR = 'ann-7f3a</svg><svg onload="window.__pwned=1">';
export const N_ITEMS = 14;

const pad = (i) => String(i + 1).padStart(2, '0');
// Item i: question "Qnn: <payload i>", answers "<model tag>-nn: <payload>". Item 3's id and a few
// categories are hostile too. Quality falls from cand to third so the simulator has a signal.
export function makeBenchmark() {
  const items = [], answers = [];
  for (let i = 0; i < N_ITEMS; i++) {
    const p = PAYLOADS[i % PAYLOADS.length];
    const id = i === 2 ? `h-03"><img src=x onerror="window.__pwned=1">` : `h-${pad(i)}`;
    const item = { id, question: `Q${pad(i)}: which is right? ${p} (über 日本語 🙂)`, category: i % 3 === 0 ? `cat</svg><svg onload="window.__pwned=1">` : 'plain' };
    if (i % 2 === 0) item.reference = `Reference ${pad(i)}: ${PAYLOADS[(i + 3) % PAYLOADS.length]}`;
    items.push(item);
    answers.push({ item: id, model: MODELS.cand, answer: `CAND-${pad(i)}: ${PAYLOADS[(i + 1) % PAYLOADS.length]}\nsecond line <b>bold?</b>`, quality: 0.85 });
    answers.push({ item: id, model: MODELS.base, answer: `BASE-${pad(i)}: ${PAYLOADS[(i + 2) % PAYLOADS.length]}`, quality: 0.55 });
    answers.push({ item: id, model: MODELS.third, answer: `THIRD-${pad(i)}: ${PAYLOADS[(i + 4) % PAYLOADS.length]}`, quality: 0.3 });
  }
  return { items, answers };
}

const jsonl = (rows) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
// YAML double-quoted scalars are JSON strings, so JSON.stringify quotes a name safely.
const yq = (s) => JSON.stringify(s);

// buildHostileStores(arb, dir): returns {sbsDb, fullDb, items, answers}. sbsDb holds the items and
// one side-by-side run (cand vs base) and no labels: the annotation tests start from it. fullDb
// adds labels, a tournament of the three models by two judges that are contestants (peer weights)
// and peer discussions: the report test reads it.
export async function buildHostileStores(arb, dir) {
  const { items, answers } = makeBenchmark();
  const itemsFile = path.join(dir, 'items.jsonl'), answersFile = path.join(dir, 'answers.jsonl');
  fs.writeFileSync(itemsFile, jsonl(items));
  fs.writeFileSync(answersFile, jsonl(answers));
  const sim = await startServer(arb, ['sim-server', '--port', '0', '--port-file', '{port-file}',
    '--items', itemsFile, '--answers', answersFile, '--seed', '7',
    '--judge', 'sim-a:skill=4,bias=0.3', '--judge', 'sim-b:skill=3,bias=-0.2'], dir, 'sim');
  const url = `http://127.0.0.1:${sim.port}/v1`;
  try {
    const sbsDb = path.join(dir, 'hostile-sbs.db');
    mustRun(arb, ['sbs', '--items', itemsFile, '--answers', answersFile, '--candidate', MODELS.cand,
      '--baseline', MODELS.base, '--judge-url', url, '--judge-model', 'sim-a', '--judge-name', JUDGES.sbs,
      '--db', sbsDb, '--no-progress']);
    const fullDb = path.join(dir, 'hostile-full.db');
    sql(sbsDb, `vacuum into '${fullDb.replace(/'/g, "''")}'`);
    const judgesFile = path.join(dir, 'judges.yaml');
    fs.writeFileSync(judgesFile, [
      'judges:',
      `  - name: ${yq(JUDGES.a)}`, `    url: ${url}`, '    model: sim-a', `    contestant: ${yq(MODELS.cand)}`,
      `  - name: ${yq(JUDGES.b)}`, `    url: ${url}`, '    model: sim-b', `    contestant: ${yq(MODELS.base)}`,
      ''].join('\n'));
    mustRun(arb, ['tournament', '--items', itemsFile, '--answers', answersFile, '--judges', judgesFile,
      '--db', fullDb]);
    mustRun(arb, ['discuss', '--judges', judgesFile, '--reviewers', `${JUDGES.a},${JUDGES.b}`,
      '--items', itemsFile, '--answers', answersFile, '--pairs', `${MODELS.cand}:${MODELS.base}`,
      '--turns', '2', '--db', fullDb]);
    const labelsFile = path.join(dir, 'labels.jsonl');
    const labels = [];
    for (let i = 0; i < 6; i++) {
      labels.push({ item: items[i].id, candidate: MODELS.cand, baseline: MODELS.base, verdict: 'abcdab'[i], annotator: ANNOTATOR });
      labels.push({ item: items[i].id, candidate: MODELS.cand, baseline: MODELS.base, verdict: 'aacdbb'[i], annotator: 'plain-annotator' });
    }
    fs.writeFileSync(labelsFile, jsonl(labels));
    mustRun(arb, ['labels', 'import', '--db', fullDb, labelsFile]);
    return { sbsDb, fullDb, items, answers, itemsFile, answersFile };
  } finally {
    await sim.kill('SIGKILL');
  }
}

#!/usr/bin/env node
// CPU seconds (user + system) of each test file's whole process tree — the node:test child, the
// gateways, Redis, Chromium… it starts — run one file per process, `--jobs` files at a time
// (default 1). On a shared machine wall time swings with the load; CPU seconds are the stable
// figure, and on a CPU-bound run (`npm test` runs 4 files at once on two cores) they are what a
// file costs the suite. Linux only (prctl, /proc); needs python3.
//
//   node scripts/test-file-cpu.mjs [--jobs=2] test/ui/palette.test.ts test/ui/forms.test.ts …
//   node scripts/test-file-cpu.mjs --all --jobs=2      # every test file (slow: the whole suite)
//
// Prints one line per file as it finishes and a table sorted by CPU at the end. A descendant that
// outlives its parent (re-parented to init) is not counted — none of the test helpers leave one.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { buildTestTree } from './test-tree.mjs';

function collect(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return collect(path);
      return name.endsWith('.test.ts') ? [path] : [];
    });
}

const args = process.argv.slice(2);
const jobs = Number(args.find((a) => a.startsWith('--jobs='))?.slice('--jobs='.length) ?? '1');
const files = args.includes('--all') ? collect('test') : args.filter((a) => !a.startsWith('--'));
if (files.length === 0) {
  console.error('usage: node scripts/test-file-cpu.mjs [--jobs=N] (--all | test/a.test.ts …)');
  process.exit(2);
}
for (const script of ['scripts/build-ui.mjs', 'scripts/build.mjs']) {
  const built = spawnSync(process.execPath, [script], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}

// Compiled, as run-tests.mjs runs them (scripts/test-tree.mjs), unless SWITCHYARD_TEST_TSX=1.
const tree = process.env.SWITCHYARD_TEST_TSX === '1' ? undefined : await buildTestTree();
const loader = tree === undefined ? ['--import', 'tsx'] : ['--enable-source-maps'];

// A small parent per file (python3, for prctl): it makes itself the "child subreaper" of the file's
// process tree, so a process whose parent exits first (Chromium's renderers and zygote, say) is
// re-parented to it rather than to init, runs the file, reaps every descendant, and reports
// getrusage(RUSAGE_CHILDREN) — the CPU of the whole tree, exactly. A descendant still running 30 s
// after the file ended is killed and named on stderr.
const MEASURE = `
import ctypes, json, os, resource, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
started = time.time()
main = subprocess.Popen([sys.argv[1], *json.loads(sys.argv[3]), '--test', '--test-reporter=dot',
    '--test-timeout=180000', sys.argv[2]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
status = main.wait()
wall = time.time() - started
deadline = time.time() + 30
while True:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid != 0:
        continue
    if time.time() > deadline:
        for d in os.listdir('/proc'):
            try:
                if d.isdigit() and open('/proc/%s/stat' % d).read().rsplit(') ', 1)[1].split()[1] == str(os.getpid()):
                    sys.stderr.write('left running, killed: %s\\n' % open('/proc/%s/cmdline' % d).read().replace('\\0', ' ')[:200])
                    os.kill(int(d), signal.SIGKILL)
            except (OSError, IndexError):
                pass
        deadline = float('inf')
    time.sleep(0.05)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({'cpu': usage.ru_utime + usage.ru_stime, 'wall': wall, 'status': status}))
`;

function measure(file) {
  return new Promise((resolve) => {
    const target = tree === undefined ? file : join(tree, relative('.', file)).replace(/\.ts$/, '.js');
    const child = spawn('python3', ['-c', MEASURE, process.execPath, target, JSON.stringify(loader)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('close', () => {
      const row = { file, ...JSON.parse(out || '{"cpu":0,"wall":0,"status":-1}') };
      console.log(
        `${row.cpu.toFixed(1).padStart(7)} s CPU ${row.wall.toFixed(1).padStart(7)} s wall  ${row.status === 0 ? 'ok  ' : 'FAIL'} ${file}`,
      );
      resolve(row);
    });
  });
}

const queue = [...files];
const rows = [];
await Promise.all(
  Array.from({ length: Math.max(1, jobs) }, async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) rows.push(await measure(file));
  }),
);
rows.sort((a, b) => b.cpu - a.cpu);
console.log('\n# CPU seconds (user+sys of the process tree), wall seconds, file');
for (const r of rows)
  console.log(`${r.cpu.toFixed(1).padStart(7)} ${r.wall.toFixed(1).padStart(7)}  ${r.file}`);
console.log(`# total ${rows.reduce((s, r) => s + r.cpu, 0).toFixed(1)} s CPU in ${rows.length} files`);
process.exit(rows.some((r) => r.status !== 0) ? 1 : 0);

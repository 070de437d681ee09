/**
 * examples/README.md runs as written (issue #19 item 4). Every section
 * `### <name>` whose first ```sh block has an `npx switchyard …` line and no
 * `# needs:` line is run for real: the shipped stand-in backend
 * (examples/backend/server.mjs) is started, the gateway is spawned with the
 * command's arguments, and each `curl` line is sent in order; the status after
 * `#` must match, and text in backquotes after it must appear in the answer.
 *
 * The ports differ from the documented ones only so that parallel test runs do
 * not collide: every `${VAR:-default}` of the example whose default names port
 * 8080 (the gateway itself) gets the spawned gateway's port, 9801/9802 (the
 * backend) the test backend's ports.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { spawnGateway } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(join(repo, 'examples', 'README.md'), 'utf8');

export interface Section {
  name: string;
  args: string[];
  env: Record<string, string>;
  curls: string[];
  needs: boolean;
}

/** Splits a shell line into words: single and double quotes, no expansion. */
function words(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let has = false;
  for (const ch of line) {
    if (quote !== null) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      has = true;
    } else if (ch === ' ' || ch === '\t') {
      if (has || cur !== '') out.push(cur);
      cur = '';
      has = false;
    } else cur += ch;
  }
  if (has || cur !== '') out.push(cur);
  return out;
}

/** The code part of a line and its trailing `# comment` (a `#` outside quotes after a space). */
function splitComment(line: string): [string, string] {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote !== null) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '#' && (i === 0 || line[i - 1] === ' '))
      return [line.slice(0, i).trim(), line.slice(i + 1)];
  }
  return [line.trim(), ''];
}

function sections(): Section[] {
  const out: Section[] = [];
  const parts = readme.split(/^### /m).slice(1);
  for (const part of parts) {
    const name = (part.split('\n')[0] ?? '').trim();
    const block = /```sh\n([\s\S]*?)```/.exec(part)?.[1];
    if (block === undefined) continue;
    const lines = block.replace(/\\\n\s*/g, ' ').split('\n');
    const section: Section = { name, args: [], env: {}, curls: [], needs: false };
    for (const raw of lines) {
      const [code, comment] = splitComment(raw);
      if (code === '' && /^\s*needs:/i.test(comment)) section.needs = true;
      const w = words(code);
      const at = w.indexOf('npx');
      if (at !== -1 && w[at + 1] === 'switchyard') {
        for (const assignment of w.slice(0, at)) {
          const eq = assignment.indexOf('=');
          if (eq > 0) section.env[assignment.slice(0, eq)] = assignment.slice(eq + 1);
        }
        section.args = w.slice(at + 2);
      } else if (w[0] === 'curl') section.curls.push(raw);
    }
    if (section.args.length > 0) out.push(section);
  }
  return out;
}

interface CurlRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

function parseCurl(code: string, gatewayPort: number): CurlRequest {
  const w = words(code).slice(1);
  const req: CurlRequest = { method: '', url: '', headers: {} };
  for (let i = 0; i < w.length; i++) {
    const a = w[i] ?? '';
    const next = () => w[++i] ?? '';
    if (a === '-i' || a === '-s' || a === '-si' || a === '-is' || a === '-v' || a === '--compressed')
      continue;
    else if (a === '-H') {
      const h = next();
      const c = h.indexOf(':');
      req.headers[h.slice(0, c).trim().toLowerCase()] = h.slice(c + 1).trim();
    } else if (a === '-X') req.method = next();
    else if (a === '-d' || a === '--data' || a === '--data-raw') req.body = next();
    else if (a === '-u') req.headers.authorization = `Basic ${Buffer.from(next()).toString('base64')}`;
    else if (a === '-A') req.headers['user-agent'] = next();
    else if (a === '-e') req.headers.referer = next();
    else if (a === '-b') req.headers.cookie = next();
    else if (a.startsWith('-')) throw new Error(`curl flag ${a} is not understood by this test: ${code}`);
    else req.url = a;
  }
  if (!/^https?:\/\//.test(req.url)) req.url = `http://${req.url}`;
  req.url = req.url.replace(/\/\/(localhost|127\.0\.0\.1):8080/, `//127.0.0.1:${gatewayPort}`);
  if (req.method === '') req.method = req.body === undefined ? 'GET' : 'POST';
  if (req.body !== undefined && req.headers['content-type'] === undefined)
    req.headers['content-type'] = 'application/x-www-form-urlencoded';
  return req;
}

let backend: ChildProcess;
const backendPorts: number[] = [];

before(async () => {
  backendPorts.push(await freePort(), await freePort());
  backend = spawn(process.execPath, [join(repo, 'examples/backend/server.mjs')], {
    env: { ...process.env, BACKEND_PORTS: backendPorts.join(',') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  backend.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(() => out.split('listening').length - 1 === 2, {
    timeoutMs: 10_000,
    what: 'the example backend',
  });
});

after(() => {
  backend.kill();
});

test('the example backend echoes method, path, query, headers and body as JSON', async () => {
  const res = await fetch(`http://127.0.0.1:${backendPorts[0]}/a/b?x=1`, {
    method: 'POST',
    headers: { 'x-demo': 'yes' },
    body: 'hi',
  });
  assert.equal(res.status, 200);
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(body.method, 'POST');
  assert.equal(body.path, '/a/b');
  assert.deepEqual(body.query, { x: '1' });
  assert.equal((body.headers as Record<string, string>)['x-demo'], 'yes');
  assert.equal(body.body, 'hi');
  assert.equal(body.backend, backendPorts[0]);
});

/**
 * Each section spawns a gateway (several seconds on a busy 2-core machine), so
 * `npm test` runs a fixed sample: the first example, examples that used to proxy
 * into themselves, and one of each kind of node. `EXAMPLES=all` runs every
 * runnable section; `EXAMPLES=a,b` the named ones.
 */
const SAMPLE = [
  'hello',
  'key-auth',
  'condition',
  'traffic-split',
  'cors',
  'api-breaker',
  'data-mask',
  'gzip',
  'body-transformer',
  'error-handler',
  'proxy-rewrite',
  'uri-blocker',
];
const only = process.env.EXAMPLES === 'all' ? undefined : (process.env.EXAMPLES?.split(',') ?? SAMPLE);
test('examples/README.md: every sampled section exists and is runnable offline', () => {
  const runnable = sections()
    .filter((s) => !s.needs && s.curls.length > 0)
    .map((s) => s.name);
  for (const name of SAMPLE) assert.ok(runnable.includes(name), `no runnable section '${name}'`);
});

// Three sections at a time (each its own gateway and ports): one after another they outgrow the
// file's time budget on a loaded 2-core machine.
describe('examples/README.md sections', { concurrency: 3 }, () => {
  for (const section of sections()) {
    if (section.needs || section.curls.length === 0) continue;
    if (only !== undefined && !only.includes(section.name)) continue;
    test(`examples/README.md: ${section.name} answers as documented`, async () => {
      const [port, adminPort] = [await freePort(), await freePort()];
      const env: Record<string, string> = {
        GATEWAY_PORT: String(port),
        GATEWAY_BIND: '127.0.0.1',
        ADMIN_PORT: String(adminPort),
        LOG_LEVEL: 'warn',
        ...section.env,
      };
      const args = section.args.map((a) =>
        a.startsWith('examples/') || a.startsWith('config/') ? join(repo, a) : a,
      );
      // Point the example's own placeholders at this run's ports.
      for (const a of args) {
        if (!a.endsWith('.yaml') || !existsSync(a)) continue;
        for (const m of readFileSync(a, 'utf8').matchAll(/\$\{(\w+):-([^}]*)\}/g)) {
          const [, name = '', def = ''] = m;
          if (name in env) continue;
          const replaced = def
            .replace(/^8080$/, String(port))
            .replace(/(localhost|127\.0\.0\.1):8080/, `127.0.0.1:${port}`)
            .replace(/^9801$/, String(backendPorts[0]))
            .replace(/^9802$/, String(backendPorts[1]));
          if (replaced !== def) env[name] = replaced;
        }
      }
      const gw = spawnGateway(args, env);
      try {
        await waitFor(
          async () => {
            if (gw.child.exitCode !== null) throw new Error(`gateway exited:\n${gw.output()}`);
            try {
              await fetch(`http://127.0.0.1:${port}/`);
              return true;
            } catch {
              return false;
            }
          },
          { timeoutMs: 60_000, intervalMs: 100, what: `${section.name} to listen` },
        );
        for (const raw of section.curls) {
          const [code, comment] = splitComment(raw);
          const status = /\b(\d{3})\b/.exec(comment)?.[1];
          assert.ok(status !== undefined, `no expected status after # in: ${raw}`);
          const req = parseCurl(code, port);
          const res = await fetch(req.url, {
            method: req.method,
            headers: req.headers,
            redirect: 'manual',
            ...(req.body === undefined ? {} : { body: req.body }),
          });
          const head = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
          const text = `${head}\n\n${await res.text()}`;
          assert.equal(String(res.status), status, `${raw}\n→ ${res.status}\n${text}`);
          for (const m of comment.matchAll(/`([^`]+)`/g)) {
            // The backend's ports as documented (9801/9802) are this run's ports.
            const want = (m[1] ?? '')
              .replace(/\b9801\b/g, String(backendPorts[0]))
              .replace(/\b9802\b/g, String(backendPorts[1]));
            assert.ok(text.includes(want), `${raw}\n→ the answer lacks ${want}:\n${text}`);
          }
        }
      } finally {
        await gw.stop();
      }
    });
  }
});

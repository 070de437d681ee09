// The probes of `npm run bench:scenarios` (bench/table-scenarios.ts) must catch a config that does
// not do what its scenario says, or the table measures the wrong thing: each probe passes against its
// own scenario's gateway and fails against a plain proxy (no key required, no limit, no rewrite) or
// a TLS 1.2-only server. Checked for what the probes decide, never for speed.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gatewayArgv, startNodeProcess } from '../../bench/measure.js';
import { createAuthority } from '../support/certs.js';
import { ProbeFailure, tableScenarios, type TableScenario } from '../../bench/table-scenarios.js';

const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'switchyard-probe-test-'));
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));

const scenario = (name: string): TableScenario => {
  const found = tableScenarios.find((s) => s.name === name);
  assert.ok(found, `no scenario ${name}`);
  return found;
};

let originPort = 0;
async function gateway(name: string, yaml: string): Promise<string> {
  const sub = join(dir, name);
  mkdirSync(sub);
  writeFileSync(
    join(sub, 'system.yaml'),
    'listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info, format: json }\n',
  );
  writeFileSync(join(sub, 'gateway.yaml'), yaml);
  const started = await startNodeProcess(gatewayArgv(sub), {}, null, children);
  return `http://127.0.0.1:${started.port}`;
}

const tested = ['key-auth', 'header-rewrite', 'rate-limit-local'];
const own = new Map<string, string>();
let plainProxy = '';

before(async () => {
  const origin = await startNodeProcess(['--import', 'tsx', 'bench/scenario-origin.ts'], {}, null, children);
  originPort = origin.port;
  const started = await Promise.all(
    ['proxy', ...tested].map(async (name) => [
      name,
      await gateway(name, scenario(name).gatewayYaml(originPort)),
    ]),
  );
  for (const [name, url] of started) own.set(name!, url!);
  plainProxy = own.get('proxy')!;
});

after(() => {
  children.forEach((child) => child.kill('SIGTERM'));
  rmSync(dir, { recursive: true, force: true });
});

test('bench scenario probes pass on their own scenario config', async () => {
  for (const name of ['proxy', ...tested]) {
    const base = own.get(name)!;
    const s = scenario(name);
    const note = await s.probe({ peer: 'switchyard', url: `${base}${s.path}` });
    assert.ok(note.length > 0, name);
  }
});

test('bench scenario probes fail loudly on a plain proxy: key not required, no limit, no rewrite', async () => {
  for (const name of tested) {
    const s = scenario(name);
    await assert.rejects(
      s.probe({ peer: 'switchyard', url: `${plainProxy}${s.path}` }),
      (err: unknown) => err instanceof ProbeFailure,
      `${name}'s probe passed against a plain proxy`,
    );
  }
  await assert.rejects(
    scenario('key-auth').probe({ peer: 'switchyard', url: `${plainProxy}/bench` }),
    /without a credential got 200, not 401/,
  );
});

test('bench tls probe refuses a server that negotiates TLS 1.2 only', async () => {
  const certs = createAuthority(dir).issue('tls12', {
    cn: 'localhost',
    dns: ['localhost'],
    ips: ['127.0.0.1'],
  });
  const server = createServer(
    { cert: readFileSync(certs.cert), key: readFileSync(certs.key), maxVersion: 'TLSv1.2' },
    (_req, res) => res.end('{"hello":"world"}'),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    await assert.rejects(
      scenario('tls-keep-alive').probe({ peer: 'switchyard', url: `https://127.0.0.1:${port}/bench` }),
      /negotiated TLSv1\.2, not TLSv1\.3/,
    );
  } finally {
    server.close();
  }
});

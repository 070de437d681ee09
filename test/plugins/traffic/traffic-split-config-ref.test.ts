/**
 * F28 (shared/reports/operator-review.md): a traffic-split canary slot had no health checks, and
 * its answer was read whole and could not share the stable upstream's response-side nodes. A slot
 * may now name a shared upstream config (`config_ref`), whose checks are the gateway's (one per
 * target and probe, HealthRegistry), and a routed answer streams into the same nodes as the
 * stable upstream's.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { after, test } from 'node:test';
import { parseGatewayConfig } from '../../../src/config/gateway.js';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { HEALTH_SCOPE_KEY, HealthRegistry } from '../../../src/outbound/health/registry.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { echo, startOrigin, type Origin, type OriginHandler } from '../../support/origins.js';
import { waitFor } from '../../support/wait.js';

const origins: Origin[] = [];
const gateways: RunningGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
  await closeAllPools();
});

async function origin(name: string, handler: OriginHandler = echo(name)): Promise<Origin> {
  const o = await startOrigin(handler, { name });
  origins.push(o);
  return o;
}

/** An echo origin whose /healthz answers `health.status`. */
async function checkedOrigin(name: string, health: { status: number }): Promise<Origin> {
  const answer = echo(name);
  return origin(name, (req, res, body) => {
    if (req.url === '/healthz') {
      res.writeHead(health.status).end();
      return;
    }
    answer(req, res, body);
  });
}

/** gateway_upstream_target_up of a target of policy p's canary slot (node id split/canary-up); undefined if absent. */
async function targetUp(gw: RunningGateway, target: string): Promise<number | undefined> {
  const text = (await gw.gateway.metrics.render()).body;
  const line = `gateway_upstream_target_up{policy="p",node_id="split/canary-up",target="${target}"} `;
  const found = text.split('\n').find((l) => l.startsWith(line));
  return found === undefined ? undefined : Number(found.slice(line.length));
}

const healthzHits = (o: Origin): number => o.requests.filter((r) => r.url === '/healthz').length;

async function gateway(yaml: string): Promise<RunningGateway> {
  const gw = await startGateway(yaml);
  gateways.push(gw);
  return gw;
}

const registryOf = (gw: RunningGateway): HealthRegistry =>
  gw.gateway.scope.shared(HEALTH_SCOPE_KEY, () => new HealthRegistry());

function splitConfig(sick: Origin, well: Origin, stable: Origin, description = ''): string {
  return `
plugin_configs:
  - name: canary-up
    type: upstream
    config:
      targets: [{ host: 127.0.0.1, port: ${sick.port} }, { host: 127.0.0.1, port: ${well.port} }]
      health_check:
        active: { path: /healthz, interval_ms: 50, healthy_statuses: [200], unhealthy_threshold: 1, healthy_threshold: 1 }
routes:
  - { name: r, match: { path: /app/* }, policy: p }
  - { name: direct, match: { path: /direct/* }, policy: q }
policies:
  - name: p
    description: "${description}"
    nodes:
      - { id: listener, type: listener }
      - id: split
        type: traffic-split
        config:
          rules:
            - match: [["http_x_canary", "==", "1"]]
              weighted_upstreams: [{ config_ref: canary-up }]
      - { id: stable, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${stable.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: split.in }
      - { from: split.routed, to: client.in }
      - { from: split.success, to: stable.in }
      - { from: stable.success, to: client.in }
  - name: q
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config_ref: canary-up }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
`;
}

test('F28: a config_ref slot is health checked: a canary target failing /healthz leaves the rotation, the check shared with the upstream node of the same config, and a reload keeps it down', async () => {
  const sickHealth = { status: 503 };
  const sick = await checkedOrigin('canary-sick', sickHealth);
  const well = await checkedOrigin('canary-well', { status: 200 });
  const stable = await origin('stable');
  const gw = await gateway(splitConfig(sick, well, stable));

  // Before the fix a slot had no checks: the sick target got every other canary request.
  await waitFor(() => healthzHits(sick) >= 2, { what: 'probes of the sick canary target' });
  const seen: string[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await request(`${gw.url}/app/x`, { headers: { 'x-canary': '1' } });
    assert.equal(res.status, 200);
    seen.push(String(res.headers['x-origin']));
  }
  assert.deepEqual(new Set(seen), new Set(['canary-well']), `canary answers: ${seen.join(', ')}`);
  assert.equal(sick.requests.filter((r) => r.url !== '/healthz').length, 0);
  assert.equal((await request(`${gw.url}/app/x`)).headers['x-origin'], 'stable');

  // The slot's targets are in the dashboard's health series under node id split/canary-up.
  assert.equal(await targetUp(gw, `127.0.0.1:${sick.port}`), 0);
  assert.equal(await targetUp(gw, `127.0.0.1:${well.port}`), 1);

  // The slot and policy q's upstream probe the same targets the same way: one check per target.
  assert.equal(registryOf(gw).checks, 2);

  // A reload that recompiles policy p (its description changed) keeps the down target down: the
  // very next canary requests avoid it.
  const runtime = await gw.gateway.apply(
    parseGatewayConfig(splitConfig(sick, well, stable, 'reloaded')),
    'admin',
  );
  assert.equal(runtime.compiled, 1, 'policy p was compiled again');
  for (let i = 0; i < 4; i++) {
    const res = await request(`${gw.url}/app/x`, { headers: { 'x-canary': '1' } });
    assert.equal(res.headers['x-origin'], 'canary-well');
  }
  assert.equal(sick.requests.filter((r) => r.url !== '/healthz').length, 0);

  // The target recovers: the slot sends to it again.
  sickHealth.status = 200;
  await waitFor(
    async () =>
      (await request(`${gw.url}/app/x`, { headers: { 'x-canary': '1' } })).headers['x-origin'] ===
      'canary-sick',
    { what: 'the recovered canary target back in rotation', timeoutMs: 15_000 },
  );
  assert.equal(await targetUp(gw, `127.0.0.1:${sick.port}`), 1);
});

/** An origin that sends `first`, then holds the rest until `release()` is called. */
async function holdingOrigin(name: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const o = await origin(name, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-origin': name });
    res.write('first;');
    void released.then(() => res.end('rest'));
  });
  return { origin: o, release };
}

/** GET resolving with the response as soon as its first body chunk arrived, and the whole body later. */
function firstChunk(url: string, headers: Record<string, string>) {
  return new Promise<{ res: IncomingMessage; first: string; whole: Promise<string> }>((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      let first: string | undefined;
      const whole = new Promise<string>((done) =>
        res.on('end', () => done(Buffer.concat(chunks).toString())),
      );
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (first === undefined) {
          first = chunk.toString();
          resolve({ res, first, whole });
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

for (const kind of ['config_ref', 'upstream'] as const) {
  test(`F28: a routed answer (${kind} slot) streams, and goes through the response-side nodes shared with the stable upstream`, async () => {
    const canary = await holdingOrigin(`canary-stream-${kind}`);
    const stable = await origin(`stable-stream-${kind}`);
    const slot =
      kind === 'config_ref'
        ? '{ config_ref: canary-up }'
        : `{ upstream: { targets: [{ host: 127.0.0.1, port: ${canary.origin.port} }] } }`;
    const gw = await gateway(`
plugin_configs:
  - { name: canary-up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${canary.origin.port} }] } }
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - id: split
        type: traffic-split
        config:
          rules:
            - match: [["http_x_canary", "==", "1"]]
              weighted_upstreams: [${slot}]
      - { id: stable, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${stable.port} }] } }
      - { id: headers, type: response-rewrite, config: { headers: { set: { x-frame-options: DENY } } } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: split.in }
      - { from: split.routed, to: headers.in }
      - { from: split.success, to: stable.in }
      - { from: stable.success, to: headers.in }
      - { from: headers.success, to: client.in }
`);
    // The first chunk reaches the client while the canary still holds the rest: the answer streams.
    const got = await firstChunk(`${gw.url}/s`, { 'x-canary': '1' });
    assert.equal(got.first, 'first;');
    assert.equal(got.res.headers['x-origin'], `canary-stream-${kind}`);
    assert.equal(got.res.headers['x-frame-options'], 'DENY', 'the shared response-side node ran');
    canary.release();
    assert.equal(await got.whole, 'first;rest');

    const plain = await request(`${gw.url}/s`);
    assert.equal(plain.headers['x-origin'], `stable-stream-${kind}`);
    assert.equal(plain.headers['x-frame-options'], 'DENY');
  });
}

function rejection(yaml: string): Promise<ConfigRejected> {
  return startGateway(yaml).then(
    (gw) => {
      gateways.push(gw);
      throw new Error('the configuration was accepted');
    },
    (err: unknown) => {
      assert.ok(err instanceof ConfigRejected, String(err));
      return err;
    },
  );
}

const slotPolicy = (slot: string) => `
plugin_configs:
  - { name: canary-up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 9 }] } }
  - { name: cors-shared, type: cors, config: { allowed_origins: ["*"] } }
  - { name: empty-up, type: upstream, config: { targets: [] } }
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: split, type: traffic-split, config: { rules: [{ weighted_upstreams: [${slot}, { weight: 1 }] }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: split.in }
      - { from: split.routed, to: client.in }
      - { from: split.success, to: client.in }
`;

test('F28: a bad slot config_ref is refused at its key path, naming the problem', async () => {
  const at = 'policies[0].nodes[1].config.rules[0].weighted_upstreams[0].config_ref';
  const cases: [string, RegExp][] = [
    ['{ config_ref: canary-upp }', /'canary-upp' names no plugin_configs entry.*canary-up/],
    [
      '{ config_ref: cors-shared }',
      /'cors-shared' is a 'cors' config; a config of type 'upstream' is needed/,
    ],
    [
      '{ config_ref: canary-up, upstream: { targets: [{ host: 127.0.0.1, port: 9 }] } }',
      /either upstream or config_ref/,
    ],
    ['{ config_ref: empty-up }', /plugin_configs 'empty-up': config\.targets/],
  ];
  for (const [slot, message] of cases) {
    const err = await rejection(slotPolicy(slot));
    const issue = err.issues.find((i) => i.path === at);
    assert.ok(issue, `${slot}: ${JSON.stringify(err.issues)}`);
    assert.match(issue.message, message);
  }
});

test('F28: a config_ref slot whose targets are unreachable takes the error port (TRAFFIC_SPLIT_UPSTREAM_ERROR), or answers 502 with the code when it is not wired', async () => {
  const dead = await origin('dead-canary');
  const port = dead.port;
  await dead.close();
  const yaml = (wired: boolean) => `
plugin_configs:
  - { name: canary-up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }], timeout_ms: 2000 } }
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: split, type: traffic-split, config: { rules: [{ weighted_upstreams: [{ config_ref: canary-up }] }] } }
      - id: eh
        type: error-handler
        config: { status_code: 503, body_template: '{"code": "{{error.code}}", "node": "{{error.node_id}}", "message": "{{error.message}}"}' }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: split.in }
      - { from: split.routed, to: client.in }
      - { from: split.success, to: client.in }
${wired ? '      - { from: split.error, to: eh.in }\n' : ''}      - { from: eh.success, to: client.in }
`;
  const unwired = await gateway(yaml(false));
  const res = await request(`${unwired.url}/x`);
  assert.equal(res.status, 502);
  assert.deepEqual(JSON.parse(res.body), {
    error: 'bad_gateway',
    code: 'TRAFFIC_SPLIT_UPSTREAM_ERROR',
    message: 'Unhandled error in routing policy',
  });
  const wired = await gateway(yaml(true));
  const handled = await request(`${wired.url}/x`);
  assert.equal(handled.status, 503);
  assert.deepEqual(JSON.parse(handled.body), {
    code: 'TRAFFIC_SPLIT_UPSTREAM_ERROR',
    node: 'split',
    message: 'traffic-split target unreachable',
  });
});

/**
 * The shipped monitoring kit against real components (docs/metrics.md): promtool
 * accepts deploy/prometheus/*, a real Prometheus scrapes a running gateway with
 * the metrics-only credential, and every expression of
 * deploy/grafana/switchyard.json returns series.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';
import { parse, stringify } from 'yaml';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { createAuthority } from '../support/certs.js';
import { deadPort, echo, startOrigin, type Origin } from '../support/origins.js';
import { promtool, startPrometheus, type PrometheusServer } from '../support/prometheus.js';

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
const TOKEN = 'metrics-token-0123456789abcdef';
const ADMIN = 'Basic ' + Buffer.from('admin:admin-password-0123').toString('base64');
const VIEWER = 'Basic ' + Buffer.from('watcher:viewer-password-0123').toString('base64');

let origin: Origin;
let gw: GatewayProcess;
let dir: { path: string; remove(): void };
let data = '';
let admin = '';
let dispatcher: Agent;
let prometheus: PrometheusServer | undefined;

before(async () => {
  origin = await startOrigin(echo('origin'));
  const dead = await deadPort();
  dir = tempDir('switchyard-prom-');
  const ca = createAuthority(dir.path);
  const leaf = ca.issue('gateway', { dns: ['localhost'], ips: ['127.0.0.1'] });
  dispatcher = new Agent({ connect: { ca: ca.certPem } });
  const [port, adminPort] = [await freePort(), await freePort()];
  writeFileSync(
    join(dir.path, 'system.yaml'),
    [
      `listener: { bind: 127.0.0.1, port: ${port} }`,
      `tls: { cert_path: ${leaf.cert}, key_path: ${leaf.key} }`,
      'logging: { level: warn }',
      'admin:',
      '  bind: 127.0.0.1',
      `  port: ${adminPort}`,
      '  username: admin',
      '  password: admin-password-0123',
      '  users: [{ username: watcher, password: viewer-password-0123, role: viewer }]',
      `  metrics_auth: { bearer_token: ${TOKEN}, username: prometheus, password: scrape-password-0123 }`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir.path, 'gateway.yaml'),
    `
routes:
  - { name: api, match: { path: /api/* }, policy: api-policy }
  - { name: broken, match: { path: /broken }, policy: broken-policy }
policies:
  - name: api-policy
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
  - name: broken-policy
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${dead} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
`,
  );
  gw = spawnGateway([
    '--system-config',
    join(dir.path, 'system.yaml'),
    '--gateway-config',
    join(dir.path, 'gateway.yaml'),
  ]);
  data = `https://127.0.0.1:${port}`;
  admin = `http://127.0.0.1:${adminPort}`;
  try {
    await waitForHttp(`${admin}/healthz`, 60000);
  } catch (err) {
    throw new Error(`gateway did not start: ${gw.output()}`, { cause: err });
  }
});

after(async () => {
  await prometheus?.stop();
  await gw?.stop();
  await dispatcher?.close();
  await origin?.close();
  dir?.remove();
});

async function send(path: string): Promise<number> {
  const res = await undiciFetch(`${data}${path}`, { dispatcher });
  await res.arrayBuffer();
  return res.status;
}

const scrape = (authorization?: string, path = '/metrics') =>
  fetch(`${admin}${path}`, authorization === undefined ? {} : { headers: { authorization } });

test('metrics credential: the bearer token and the metrics user open GET /metrics and nothing else', async () => {
  const bearer = await scrape(`Bearer ${TOKEN}`);
  assert.equal(bearer.status, 200);
  assert.match(await bearer.text(), /# TYPE gateway_build_info gauge/);
  const basic = await scrape('Basic ' + Buffer.from('prometheus:scrape-password-0123').toString('base64'));
  assert.equal(basic.status, 200);
  await basic.text();
  for (const path of ['/api/routes', '/api/status']) {
    const res = await scrape(`Bearer ${TOKEN}`, path);
    assert.equal(res.status, 401, path);
    await res.text();
  }
  const wrong = await scrape('Bearer not-the-token-0123456789');
  assert.equal(wrong.status, 401);
  await wrong.text();
  assert.equal((await scrape()).status, 401);
});

test('metrics credential: viewer accounts and the admin may scrape too', async () => {
  for (const who of [VIEWER, ADMIN]) {
    const res = await scrape(who);
    assert.equal(res.status, 200);
    await res.text();
  }
});

test('metrics: process, build, in-flight, upstream health and certificate series are exposed with Prometheus names', async () => {
  assert.equal(await send('/api/warm'), 200);
  const text = await (await scrape(`Bearer ${TOKEN}`)).text();
  for (const name of [
    'process_cpu_seconds_total',
    'process_resident_memory_bytes',
    'nodejs_eventloop_lag_p99_seconds',
    'nodejs_heap_size_used_bytes',
    'gateway_build_info',
    'gateway_requests_in_flight',
    'gateway_upstream_target_up',
    'gateway_upstream_duration_seconds_bucket',
    'gateway_request_bytes_total',
    'gateway_response_bytes_total',
    'gateway_tls_cert_not_after_timestamp_seconds',
    'gateway_config_last_reload_successful',
  ]) {
    assert.match(text, new RegExp(`^${name}[{ ]`, 'm'), name);
  }
  assert.match(text, /^gateway_build_info\{version="\d+\.\d+\.\d+[^"]*",node_version="v\d+/m);
  assert.match(text, /^gateway_upstream_target_up\{policy="broken-policy",node_id="up",target="[^"]+"\} 1$/m);
  // Counters end in _total; durations are seconds and sizes bytes (no _ms, no _kb).
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'counter') assert.match(name!, /_total$/, name);
    assert.doesNotMatch(name!, /_(ms|milliseconds|kb|kilobytes)(_|$)/, name);
  }
});

test('promtool: the shipped alert rules and scrape config check out, and the alert unit tests pass', () => {
  const rules = promtool(['check', 'rules', join(DEPLOY, 'prometheus/alerts.yml')]);
  assert.equal(rules.status, 0, rules.output);
  assert.match(rules.output, /SUCCESS: 6 rules found/);
  const unit = promtool(['test', 'rules', 'alerts.test.yml'], join(DEPLOY, 'prometheus'));
  assert.equal(unit.status, 0, unit.output);
  // The scrape config names its credential file beside itself: check it where that file exists.
  const kit = join(dir.path, 'kit');
  copyKit(kit);
  const config = promtool(['check', 'config', join(kit, 'prometheus.yml')]);
  assert.equal(config.status, 0, config.output);
});

/** deploy/prometheus as an operator installs it: the files side by side with the token file. */
function copyKit(to: string): void {
  mkdirSync(to);
  copyFileSync(join(DEPLOY, 'prometheus/prometheus.yml'), join(to, 'prometheus.yml'));
  copyFileSync(join(DEPLOY, 'prometheus/alerts.yml'), join(to, 'alerts.yml'));
  writeFileSync(join(to, 'switchyard-metrics-token'), TOKEN);
}

/** Every PromQL expression of the dashboard, with its template variables filled in. */
function dashboardQueries(): { title: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana/switchyard.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
    templating: { list: { name: string; definition?: string }[] };
  };
  const fill = (expr: string) =>
    expr
      .replaceAll('$__rate_interval', '15s')
      .replaceAll('$job', 'switchyard')
      .replaceAll('$instance', '.*')
      .replaceAll('$route', '.*');
  const out: { title: string; expr: string }[] = [];
  for (const panel of dashboard.panels)
    for (const target of panel.targets ?? []) out.push({ title: panel.title, expr: fill(target.expr) });
  // Variable queries are label_values(<selector>, label): the selector must match series.
  for (const variable of dashboard.templating.list) {
    const match = /^label_values\((.+), (\w+)\)$/.exec(variable.definition ?? '');
    if (match !== null)
      out.push({ title: `variable ${variable.name}`, expr: `count by (${match[2]}) (${fill(match[1]!)})` });
  }
  return out;
}

test('prometheus: a real Prometheus scrapes the gateway with the metrics token and every dashboard query returns series', async () => {
  const kit = join(dir.path, 'prom');
  copyKit(kit);
  const config = parse(readFileSync(join(kit, 'prometheus.yml'), 'utf8')) as {
    global: Record<string, string>;
    scrape_configs: { static_configs: { targets: string[] }[] }[];
  };
  config.global.scrape_interval = '1s';
  config.global.evaluation_interval = '1s';
  config.scrape_configs[0]!.static_configs = [{ targets: [new URL(admin).host] }];
  writeFileSync(join(kit, 'prometheus.yml'), stringify(config));
  prometheus = await startPrometheus(join(kit, 'prometheus.yml'), kit);
  const prom = prometheus;

  // One reload, so the reload series exist; then traffic of every kind until the queries answer.
  gw.child.kill('SIGHUP');
  let stop = false;
  const traffic = (async () => {
    while (!stop) {
      await Promise.all([send('/api/orders'), send('/broken'), send('/nowhere')]);
    }
  })();
  const queries = dashboardQueries();
  assert.ok(queries.length >= 30, `only ${queries.length} queries found`);
  let empty: string[] = [];
  try {
    await waitFor(
      async () => {
        const up = await prom.query('up{job="switchyard"} == 1');
        if (up.length !== 1) return false;
        empty = [];
        for (const { title, expr } of queries)
          if ((await prom.query(expr)).length === 0) empty.push(`${title}: ${expr}`);
        return empty.length === 0;
      },
      { timeoutMs: 90000, intervalMs: 1000, what: 'every dashboard query to return series' },
    );
  } catch (err) {
    throw new Error(`queries still empty:\n${empty.join('\n')}\n${prom.daemon.output().slice(-2000)}`, {
      cause: err,
    });
  } finally {
    stop = true;
    await traffic;
  }
  // The alert rules were loaded and evaluate without errors against live series.
  const rules = (await (await fetch(`${prom.url}/api/v1/rules`)).json()) as {
    data: { groups: { rules: { name: string; health: string }[] }[] };
  };
  const loaded = rules.data.groups.flatMap((g) => g.rules);
  assert.equal(loaded.length, 6);
  for (const rule of loaded) assert.equal(rule.health, 'ok', rule.name);
});

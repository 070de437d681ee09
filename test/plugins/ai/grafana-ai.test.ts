/**
 * deploy/grafana/switchyard-ai.json (issue 33 item 5, "panels in deploy/grafana"): every query of
 * the AI dashboard names only series a gateway running ai-proxy and mcp-proxy exports,
 * groups and filters only by labels those series have, and is valid PromQL (promtool).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { promtool } from '../../support/prometheus.js';
import { tempDir } from '../../support/temp-dir.js';

const DASHBOARD = fileURLToPath(new URL('../../../deploy/grafana/switchyard-ai.json', import.meta.url));

interface Dashboard {
  panels: { title: string; type: string; targets?: { expr: string }[] }[];
  templating: { list: { name: string; definition?: string }[] };
}

const gatewayYaml = `
routes:
  - { name: llm, match: { path: /v1/* }, policy: llm }
  - { name: mcp, match: { path: /mcp }, policy: mcp }
policies:
  - name: llm
    nodes:
      - { id: in, type: listener }
      - id: ai
        type: ai-proxy
        config: { targets: [{ name: local, provider: openai-compatible, endpoint: 'http://127.0.0.1:9' }] }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: ai.in }
      - { from: ai.success, to: out.in }
  - name: mcp
    nodes:
      - { id: in, type: listener }
      - { id: mcp, type: mcp-proxy, config: { servers: [{ name: kb, url: 'http://127.0.0.1:9/mcp' }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: mcp.in }
      - { from: mcp.success, to: out.in }
`;

let gw: RunningGateway;
before(async () => {
  gw = await startGateway(gatewayYaml);
});
after(() => gw.stop());

function queries(): { title: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const fill = (expr: string) =>
    expr
      .replaceAll('$__rate_interval', '1m')
      .replaceAll('$job', 'switchyard')
      .replaceAll('$instance', '.*')
      .replaceAll('$policy', '.*');
  const out: { title: string; expr: string }[] = [];
  for (const panel of dashboard.panels)
    for (const target of panel.targets ?? []) out.push({ title: panel.title, expr: fill(target.expr) });
  for (const variable of dashboard.templating.list) {
    const match = /^label_values\((.+), (\w+)\)$/.exec(variable.definition ?? '');
    if (match !== null)
      out.push({ title: `variable ${variable.name}`, expr: `count by (${match[2]}) (${fill(match[1]!)})` });
  }
  return out;
}

test('grafana AI dashboard: every expression names a gateway_* series the gateway exports, with labels it has', () => {
  const registry = gw.gateway.metrics.registry;
  const list = queries();
  assert.ok(list.length >= 10, 'the dashboard has its panels');
  const problems: string[] = [];
  for (const { title, expr } of list) {
    const names = expr.match(/\bgateway_[a-z0-9_]+/g) ?? [];
    assert.ok(names.length > 0, `${title}: names no gateway series`);
    for (const name of names) {
      const base = name.replace(/_(bucket|sum|count)$/, '');
      const metric = registry.getSingleMetric(name) ?? registry.getSingleMetric(base);
      if (metric === undefined) {
        problems.push(`${title}: ${name} is not exported`);
        continue;
      }
      const labels = new Set<string>([
        ...((metric as unknown as { labelNames: string[] }).labelNames ?? []),
        'instance',
        'job',
        ...(name.endsWith('_bucket') ? ['le'] : []),
      ]);
      // Selector labels right after this name, and every `by (…)` of the expression.
      const selector = new RegExp(`${name}\\{([^}]*)\\}`).exec(expr)?.[1] ?? '';
      const used = [
        ...[...selector.matchAll(/(\w+)\s*(=~|!~|!=|=)/g)].map((m) => m[1]!),
        ...[...expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim())),
      ];
      for (const label of used)
        if (!labels.has(label)) problems.push(`${title}: ${name} has no label ${label}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('grafana AI dashboard: every expression is valid PromQL (promtool check rules)', (t) => {
  if (promtool(['--version']).status !== 0) {
    t.skip('promtool is not installed');
    return;
  }
  const dir = tempDir('switchyard-grafana-ai-');
  try {
    const rules = queries()
      .map((q, i) => `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(q.expr)}`)
      .join('\n');
    const file = join(dir.path, 'rules.yml');
    writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules}\n`);
    const result = promtool(['check', 'rules', file]);
    assert.equal(result.status, 0, result.output);
  } finally {
    dir.remove();
  }
});

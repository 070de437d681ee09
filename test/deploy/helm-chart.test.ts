import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { compileWith } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { renderChart } from './go-template.js';

// helm is not installed here: the chart is rendered by the Go-template subset in go-template.ts.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = join(ROOT, 'deploy/helm/switchyard');
const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as Record<string, string>;
const defaults = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Values;
const templates = Object.fromEntries(
  readdirSync(join(CHART, 'templates')).map((f) => [f, readFileSync(join(CHART, 'templates', f), 'utf8')]),
);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

interface Values {
  ports: { http: number; admin: number };
  admin: { password: string; existingSecret: string };
  autoscaling: { enabled: boolean };
  [key: string]: unknown;
}
type Manifest = Record<string, unknown>;

/** The value at a dotted path (`spec.template.spec.containers.0.ports`) of a rendered manifest. */
function pick(value: unknown, path: string): unknown {
  let at = value;
  for (const key of path.split('.'))
    at = typeof at === 'object' && at !== null ? (at as Manifest)[key] : undefined;
  return at;
}
const str = (value: unknown, path: string): string => String(pick(value, path));
const num = (value: unknown, path: string): number => Number(pick(value, path));
const list = (value: unknown, path: string): Manifest[] => (pick(value, path) ?? []) as Manifest[];
const CONTAINER = 'spec.template.spec.containers.0';
/** A file of the rendered ConfigMap (its keys contain dots). */
const file = (configMap: unknown, name: string): string =>
  String((pick(configMap, 'data') as Manifest)[name]);

/** Renders the chart with `overrides` merged over values.yaml; manifests by kind (empty files dropped). */
function render(overrides: (v: Values) => void = () => undefined): Map<string, Manifest> {
  const values = structuredClone(defaults);
  overrides(values);
  const out = renderChart(templates, {
    Values: values,
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
    Release: { Name: 'edge', Namespace: 'default', Service: 'Helm' },
  });
  const manifests = new Map<string, Manifest>();
  for (const [file, text] of Object.entries(out)) {
    if (file.endsWith('.txt')) continue;
    for (const doc of parseAllDocuments(text)) {
      assert.deepEqual(doc.errors, [], `${file} renders to valid YAML:\n${text}`);
      const m = doc.toJSON() as Manifest | null;
      if (m === null) continue;
      const kind = str(m, 'kind');
      assert.equal(manifests.has(kind), false, `one ${kind}`);
      manifests.set(kind, m);
    }
  }
  return manifests;
}

/** config/system.yaml as shipped (no environment overrides): the listeners the chart must match. */
const shipped = parseSystemConfig(readFileSync(join(ROOT, 'config/system.yaml'), 'utf8'), {});

test('helm: Chart.yaml is a v2 application chart whose appVersion is the package version', () => {
  assert.equal(chart.apiVersion, 'v2');
  assert.equal(chart.name, 'switchyard');
  assert.equal(chart.type, 'application');
  assert.match(chart.version ?? '', /^\d+\.\d+\.\d+/);
  assert.equal(chart.appVersion, pkg.version);
});

test('helm: the default values render a Deployment, Service, ConfigMap and Secret, and no HPA', () => {
  const m = render();
  assert.deepEqual([...m.keys()].sort(), ['ConfigMap', 'Deployment', 'Secret', 'Service']);
  for (const manifest of m.values()) {
    assert.equal(pick(manifest, 'metadata.name'), 'edge');
    assert.equal(pick(manifest, 'metadata.labels')?.['app.kubernetes.io/name' as never], 'switchyard');
  }
  const deployment = m.get('Deployment');
  assert.deepEqual(
    pick(deployment, 'spec.selector.matchLabels'),
    pick(deployment, 'spec.template.metadata.labels'),
  );
  assert.equal(pick(deployment, 'spec.replicas'), 2);
  assert.equal(pick(deployment, `${CONTAINER}.image`), `switchyard:${pkg.version}`);
  assert.equal(pick(deployment, 'spec.template.spec.securityContext.runAsNonRoot'), true);
  const annotations = pick(deployment, 'spec.template.metadata.annotations') as Record<string, string>;
  assert.match(annotations['checksum/config'] ?? '', /^[0-9a-f]{64}$/);
});

test('helm: ports and probes match the listeners of config/system.yaml (/healthz and /readyz on the admin port)', () => {
  assert.equal(defaults.ports.http, shipped.listener.port);
  assert.equal(defaults.ports.admin, shipped.admin?.port);
  const m = render();
  const container = pick(m.get('Deployment'), CONTAINER);
  const ports = Object.fromEntries(
    list(container, 'ports').map((p) => [String(p.name), p.containerPort] as const),
  );
  assert.deepEqual(ports, { http: shipped.listener.port, admin: shipped.admin?.port });
  assert.deepEqual(pick(container, 'livenessProbe.httpGet'), { path: '/healthz', port: 'admin' });
  assert.deepEqual(pick(container, 'readinessProbe.httpGet'), { path: '/readyz', port: 'admin' });
  assert.ok(
    num(container, 'livenessProbe.periodSeconds') > 0 &&
      num(container, 'readinessProbe.failureThreshold') > 0,
  );
  const service = m.get('Service');
  assert.deepEqual(
    list(service, 'spec.ports').map((p) => [p.name, p.targetPort]),
    [['http', 'http']],
  );
  assert.deepEqual(pick(service, 'spec.selector'), pick(m.get('Deployment'), 'spec.selector.matchLabels'));

  // The system.yaml the pods read listens where the container ports and probes point.
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), {
    ADMIN_PASSWORD: 'from-secret',
  });
  assert.equal(system.listener.port, ports.http);
  assert.equal(system.admin?.port, ports.admin);
  assert.equal(system.admin?.bind, '0.0.0.0', 'kubelet probes reach the pod IP, not its loopback');
  assert.equal(system.config.persist, false, 'a ConfigMap is read-only');
});

test('helm: changed ports move the system.yaml listeners, the container ports and the Service together', () => {
  const m = render((v) => {
    v.ports = { http: 18080, admin: 19090 };
    (v.service as Manifest).exposeAdmin = true;
  });
  assert.deepEqual(
    list(m.get('Deployment'), `${CONTAINER}.ports`).map((p) => p.containerPort),
    [18080, 19090],
  );
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), { ADMIN_PASSWORD: 'x' });
  assert.equal(system.listener.port, 18080);
  assert.equal(system.admin?.port, 19090);
  assert.deepEqual(
    list(m.get('Service'), 'spec.ports').map((p) => p.targetPort),
    ['http', 'admin'],
  );
});

test('helm: the ConfigMap gateway.yaml compiles', () => {
  const m = render();
  const runtime = compileWith(parseGatewayConfig(file(m.get('ConfigMap'), 'gateway.yaml')), silentLogger, {});
  assert.equal(runtime.router.size, 1);
  void runtime.close();
});

test('helm: the admin password comes from the chart Secret, or from an existing one', () => {
  const generated = render();
  assert.equal(Buffer.from(str(generated.get('Secret'), 'data.admin-password'), 'base64').length, 24);
  const set = render((v) => (v.admin.password = 's3cret'));
  assert.equal(Buffer.from(str(set.get('Secret'), 'data.admin-password'), 'base64').toString(), 's3cret');

  const existing = render((v) => (v.admin.existingSecret = 'ops-admin'));
  assert.equal(existing.has('Secret'), false);
  const password = list(existing.get('Deployment'), `${CONTAINER}.env`).find(
    (e) => e.name === 'ADMIN_PASSWORD',
  );
  assert.deepEqual(pick(password, 'valueFrom.secretKeyRef'), { name: 'ops-admin', key: 'admin-password' });
});

test('helm: autoscaling renders an HPA on the Deployment and leaves replicas to it', () => {
  const m = render((v) => (v.autoscaling.enabled = true));
  const hpa = m.get('HorizontalPodAutoscaler');
  assert.equal(pick(hpa, 'apiVersion'), 'autoscaling/v2');
  assert.deepEqual(pick(hpa, 'spec.scaleTargetRef'), {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: 'edge',
  });
  assert.ok(num(hpa, 'spec.minReplicas') <= num(hpa, 'spec.maxReplicas'));
  assert.equal(pick(m.get('Deployment'), 'spec.replicas'), undefined);
});

test('helm: extra env entries reach the container', () => {
  const m = render((v) => (v.env = [{ name: 'REDIS_URL', value: 'redis://redis:6379' }]));
  assert.deepEqual(
    list(m.get('Deployment'), `${CONTAINER}.env`).find((e) => e.name === 'REDIS_URL'),
    { name: 'REDIS_URL', value: 'redis://redis:6379' },
  );
});

/** Verbs a rendered rule list grants on group/resource. */
function granted(rules: Manifest[], group: string, resource: string): string[] {
  return rules
    .filter((r) => (r.apiGroups as string[]).includes(group) && (r.resources as string[]).includes(resource))
    .flatMap((r) => r.verbs as string[]);
}

test('helm: by default no ServiceAccount or RBAC and config.source file', () => {
  const m = render();
  for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'])
    assert.equal(m.has(kind), false, kind);
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), { ADMIN_PASSWORD: 'x' });
  assert.equal(system.config.source, 'file');
  assert.equal(pick(m.get('Deployment'), 'spec.template.spec.serviceAccountName'), undefined);
});

test('helm: kubernetes.enabled switches on the Gateway API controller with its ServiceAccount and RBAC', () => {
  const m = render((v) => {
    (v.kubernetes as Manifest).enabled = true;
    (v.kubernetes as Manifest).watchNamespaces = ['apps', 'payments'];
  });
  // system.yaml: config.source kubernetes with the chart's settings, valid for the real parser.
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), { ADMIN_PASSWORD: 'x' });
  assert.equal(system.config.source, 'kubernetes');
  assert.deepEqual(
    {
      controller: system.config.kubernetes.controller_name,
      offset: system.config.kubernetes.port_offset,
      namespaces: system.config.kubernetes.watch_namespaces,
      lease: system.config.kubernetes.leader_election,
    },
    {
      controller: 'switchyard.dev/gateway-controller',
      offset: 10000,
      namespaces: ['apps', 'payments'],
      lease: { enabled: true, lease_name: 'switchyard-gateway-controller', lease_duration_seconds: 15 },
    },
  );
  assert.equal(system.workers, 1, 'the controller runs with workers: 1');

  // The pods run as the ServiceAccount, with the downward-API variables the controller reads.
  const pod = pick(m.get('Deployment'), 'spec.template.spec');
  assert.equal(pick(pod, 'serviceAccountName'), 'edge');
  assert.equal(pick(m.get('ServiceAccount'), 'metadata.name'), 'edge');
  const env = Object.fromEntries(
    list(pod, 'containers.0.env').map((e) => [String(e.name), pick(e, 'valueFrom.fieldRef.fieldPath')]),
  );
  assert.equal(env['POD_NAME'], 'metadata.name');
  assert.equal(env['POD_NAMESPACE'], 'metadata.namespace');
  assert.equal(env['POD_IP'], 'status.podIP');

  // ClusterRole: get/list/watch on what the informers read, patch/update on the statuses written.
  const rules = list(m.get('ClusterRole'), 'rules');
  const GW = 'gateway.networking.k8s.io';
  for (const [group, resource] of [
    [GW, 'gatewayclasses'],
    [GW, 'gateways'],
    [GW, 'httproutes'],
    [GW, 'referencegrants'],
    ['', 'services'],
    ['discovery.k8s.io', 'endpointslices'],
  ] as const)
    assert.deepEqual(granted(rules, group, resource).sort(), ['get', 'list', 'watch'], resource);
  for (const resource of ['gatewayclasses/status', 'gateways/status', 'httproutes/status'])
    assert.deepEqual(granted(rules, GW, resource).sort(), ['patch', 'update'], resource);
  assert.deepEqual(granted(rules, '', 'secrets'), [], 'no Secret access (no HTTPS listeners yet)');
  // Leases only in the release namespace, where $POD_NAMESPACE puts the Lease.
  assert.deepEqual(granted(rules, 'coordination.k8s.io', 'leases'), []);
  const role = m.get('Role');
  assert.equal(pick(role, 'metadata.namespace'), 'default');
  assert.deepEqual(granted(list(role, 'rules'), 'coordination.k8s.io', 'leases').sort(), [
    'create',
    'get',
    'update',
  ]);
  const subject = { kind: 'ServiceAccount', name: 'edge', namespace: 'default' };
  for (const [binding, role] of [
    ['ClusterRoleBinding', 'ClusterRole'],
    ['RoleBinding', 'Role'],
  ] as const) {
    assert.deepEqual(list(m.get(binding), 'subjects'), [subject], binding);
    assert.deepEqual(pick(m.get(binding), 'roleRef'), {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: role,
      name: pick(m.get(role), 'metadata.name'),
    });
  }
});

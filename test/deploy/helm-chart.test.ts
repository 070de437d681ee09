import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { compileWith } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { DEFAULT_ACME_DIR } from '../../src/config/acme.js';
import { renderChart, TemplateFailure } from './go-template.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';

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

/** The rendered templates (file → text) for `overrides` merged over values.yaml. */
function renderFiles(
  overrides: (v: Values) => void,
  cluster: readonly Manifest[] = [],
): Record<string, string> {
  const values = structuredClone(defaults);
  overrides(values);
  return renderChart(
    templates,
    {
      Values: values,
      Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
      Release: { Name: 'edge', Namespace: 'default', Service: 'Helm' },
    },
    cluster,
  );
}

/**
 * Renders the chart with `overrides` merged over values.yaml; manifests by kind (the first of a kind)
 * and by `kind/name` (every one); empty files dropped. `cluster`: what `lookup` finds (an upgrade).
 */
function render(
  overrides: (v: Values) => void = () => undefined,
  cluster: readonly Manifest[] = [],
): Map<string, Manifest> {
  const out = renderFiles(overrides, cluster);
  const manifests = new Map<string, Manifest>();
  for (const [file, text] of Object.entries(out)) {
    if (file.endsWith('.txt')) continue;
    for (const doc of parseAllDocuments(text)) {
      assert.deepEqual(doc.errors, [], `${file} renders to valid YAML:\n${text}`);
      const m = doc.toJSON() as Manifest | null;
      if (m === null) continue;
      const kind = str(m, 'kind');
      const named = `${kind}/${str(m, 'metadata.name')}`;
      assert.equal(manifests.has(named), false, `one ${named}`);
      manifests.set(named, m);
      if (!manifests.has(kind)) manifests.set(kind, m);
    }
  }
  return manifests;
}

/** Kinds rendered (one entry per kind). */
const kinds = (m: Map<string, Manifest>): string[] => [...m.keys()].filter((k) => !k.includes('/')).sort();

/** The message the render stops with (`fail` in a template). */
function renderFailure(overrides: (v: Values) => void): string {
  try {
    renderFiles(overrides);
  } catch (error) {
    if (error instanceof TemplateFailure) return error.message;
    throw error;
  }
  return assert.fail('the render did not fail');
}

/** config.system of the values (the system.yaml tree). */
const sys = (v: Values): Manifest => (v.config as { system: Manifest }).system;
/** Switches the values to etcd as the config source. */
const etcd = (v: Values): void => {
  fileSource(v);
  sys(v).config = { source: 'etcd', etcd: { endpoints: ['http://etcd:2379'], prefix: '/switchyard' } };
};
/** Switches the Gateway API controller off (on by default): config.system.config.source decides. */
const fileSource = (v: Values): void => void ((v.kubernetes as Manifest).enabled = false);

/** config/system.yaml as shipped (no environment overrides): the listeners the chart must match. */
const shipped = parseSystemConfig(readFileSync(join(ROOT, 'config/system.yaml'), 'utf8'), {});

test('helm: Chart.yaml is a v2 application chart whose appVersion is the package version', () => {
  assert.equal(chart.apiVersion, 'v2');
  assert.equal(chart.name, 'switchyard');
  assert.equal(chart.type, 'application');
  assert.match(chart.version ?? '', /^\d+\.\d+\.\d+/);
  assert.equal(chart.appVersion, pkg.version);
});

test('issue 32 item 3: the default values render the Gateway API controller (Deployment, Service, ConfigMap, Secret, ServiceAccount and its RBAC), one replica, no HPA', () => {
  const m = render();
  assert.deepEqual(kinds(m), [
    'ClusterRole',
    'ClusterRoleBinding',
    'ConfigMap',
    'Deployment',
    'Role',
    'RoleBinding',
    'Secret',
    'Service',
    'ServiceAccount',
  ]);
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), { ADMIN_PASSWORD: 'x' });
  assert.equal(system.config.source, 'kubernetes', 'the controller is on by default');
  for (const manifest of m.values()) {
    assert.match(String(pick(manifest, 'metadata.name')), /^edge(-leader-election)?$/);
    assert.equal(pick(manifest, 'metadata.labels')?.['app.kubernetes.io/name' as never], 'switchyard');
  }
  const deployment = m.get('Deployment');
  assert.deepEqual(
    pick(deployment, 'spec.selector.matchLabels'),
    pick(deployment, 'spec.template.metadata.labels'),
  );
  assert.equal(pick(deployment, 'spec.replicas'), 1, 'replicaCount 1 by default');
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
  const m = render((v) => {
    v.autoscaling.enabled = true;
    etcd(v);
  });
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

test('helm: kubernetes.enabled false: no ServiceAccount or RBAC and config.source file', () => {
  const m = render(fileSource);
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
  // The other route kinds, BackendTLSPolicy (its CAs in ConfigMaps), and Switchyard's own kinds.
  for (const [group, resource] of [
    [GW, 'grpcroutes'],
    [GW, 'tlsroutes'],
    [GW, 'tcproutes'],
    [GW, 'udproutes'],
    [GW, 'backendtlspolicies'],
    ['', 'configmaps'],
    ['switchyard.dev', 'switchyardpolicies'],
    ['switchyard.dev', 'switchyardconsumers'],
    ['switchyard.dev', 'switchyardglobalrules'],
  ] as const) {
    assert.deepEqual(granted(rules, group, resource).sort(), ['get', 'list', 'watch'], resource);
    if (resource !== 'configmaps')
      assert.deepEqual(granted(rules, group, `${resource}/status`).sort(), ['patch', 'update'], resource);
  }
  // The certificateRefs of HTTPS listeners, and namespace labels for allowedRoutes selectors.
  assert.deepEqual(granted(rules, '', 'secrets').sort(), ['get', 'list', 'watch'], 'secrets');
  assert.deepEqual(granted(rules, '', 'namespaces').sort(), ['list', 'watch'], 'namespaces');
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

/** The Secret's data decoded. */
const secretData = (secret: unknown): Record<string, string> =>
  Object.fromEntries(
    Object.entries(pick(secret, 'data') as Record<string, string>).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString(),
    ]),
  );
const podAnnotations = (m: Map<string, Manifest>): Record<string, string> =>
  pick(m.get('Deployment'), 'spec.template.metadata.annotations') as Record<string, string>;
/** The release's Secret as the cluster holds it after `render` (what `lookup` finds on upgrade). */
const stored = (m: Map<string, Manifest>): Manifest => {
  const secret = structuredClone(m.get('Secret')) as Manifest;
  (secret.metadata as Manifest).namespace = 'default';
  return secret;
};

test('issue 32 item 3: the chart ships the switchyard.dev CRDs in crds/ (installed before the templates), and etcd with the controller on does not render', () => {
  const crds = readdirSync(join(CHART, 'crds')).sort();
  assert.deepEqual(crds, [
    'switchyard.dev_switchyardconsumers.yaml',
    'switchyard.dev_switchyardglobalrules.yaml',
    'switchyard.dev_switchyardpolicies.yaml',
  ]);
  for (const f of crds) {
    const crd = parse(readFileSync(join(CHART, 'crds', f), 'utf8')) as Manifest;
    assert.equal(pick(crd, 'kind'), 'CustomResourceDefinition');
    assert.equal(pick(crd, 'spec.group'), 'switchyard.dev');
    assert.equal(pick(crd, 'spec.scope'), 'Namespaced');
  }
  // config.system.config.source: etcd would be silently replaced by the controller: refused.
  const message = renderFailure((v) => {
    sys(v).config = { source: 'etcd', etcd: { endpoints: ['http://etcd:2379'] } };
  });
  assert.match(message, /config\.system\.config\.source is etcd and kubernetes\.enabled is true/);
  assert.match(message, /kubernetes\.enabled: false/);
});

test('F15: a generated admin password is kept across upgrades (lookup of the release Secret)', () => {
  const install = render();
  const password = secretData(install.get('Secret'))['admin-password'] ?? '';
  assert.equal(password.length, 24);
  // helm upgrade with the same values: lookup finds the Secret the install made.
  const upgrade = render(() => undefined, [stored(install)]);
  assert.equal(secretData(upgrade.get('Secret'))['admin-password'], password);
  assert.equal(podAnnotations(upgrade)['checksum/secret'], podAnnotations(install)['checksum/secret']);
  // Without a cluster (helm template), a new one is generated: the reason to set it there.
  assert.notEqual(secretData(render().get('Secret'))['admin-password'], password);
  // admin.password set in values wins over the stored one.
  const set = render((v) => (v.admin.password = 'rotated-by-hand'), [stored(install)]);
  assert.equal(secretData(set.get('Secret'))['admin-password'], 'rotated-by-hand');
});

test("F15: the Secret's data is in the pods' checksum: a new password rolls the pods, nothing else does", () => {
  const a = render((v) => (v.admin.password = 'first-password'));
  const again = render((v) => (v.admin.password = 'first-password'));
  const b = render((v) => (v.admin.password = 'second-password'));
  assert.match(podAnnotations(a)['checksum/secret'] ?? '', /^[0-9a-f]{64}$/);
  assert.equal(podAnnotations(again)['checksum/secret'], podAnnotations(a)['checksum/secret']);
  assert.notEqual(podAnnotations(b)['checksum/secret'], podAnnotations(a)['checksum/secret']);
  assert.equal(podAnnotations(b)['checksum/config'], podAnnotations(a)['checksum/config']);
  // A generated password: the checksum is that of the Secret rendered with it (one value per render).
  const generated = render();
  const upgraded = render(
    (v) => (v.admin.password = secretData(generated.get('Secret'))['admin-password'] ?? ''),
  );
  assert.equal(podAnnotations(upgraded)['checksum/secret'], podAnnotations(generated)['checksum/secret']);
  // An existingSecret: its data as lookup finds it.
  const external = (password: string): Manifest => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'ops-admin', namespace: 'default' },
    data: { 'admin-password': Buffer.from(password).toString('base64') },
  });
  const useExisting = (v: Values): void => void (v.admin.existingSecret = 'ops-admin');
  assert.notEqual(
    podAnnotations(render(useExisting, [external('one')]))['checksum/secret'],
    podAnnotations(render(useExisting, [external('two')]))['checksum/secret'],
  );
});

test('F16: two replicas reading gateway.yaml from the ConfigMap do not render, with the reason and the fix', () => {
  const message = renderFailure((v) => {
    fileSource(v);
    v.replicaCount = 2;
  });
  assert.match(message, /^2 pods .*config\.system\.config\.source 'file'/);
  assert.match(message, /lose them on restart/);
  assert.match(message, /config\.system\.config\.source: etcd/);
  assert.match(message, /kubernetes\.enabled: true/);
  // The HPA could scale to several pods the same way.
  assert.match(
    renderFailure((v) => {
      fileSource(v);
      v.autoscaling.enabled = true;
    }),
    /^10 pods/,
  );
  // Values of chart 0.1.2 that moved are refused rather than ignored.
  assert.match(
    renderFailure((v) => ((v.config as Manifest).logLevel = 'debug')),
    /config\.logLevel.* moved to config\.system/,
  );
});

test('F16: two replicas with etcd (or the Gateway API controller) render, with a PodDisruptionBudget', () => {
  const m = render((v) => {
    v.replicaCount = 2;
    etcd(v);
  });
  assert.equal(pick(m.get('Deployment'), 'spec.replicas'), 2);
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), { ADMIN_PASSWORD: 'x' });
  assert.equal(system.config.source, 'etcd');
  assert.deepEqual(system.config.etcd?.endpoints, ['http://etcd:2379']);
  const pdb = m.get('PodDisruptionBudget');
  assert.equal(pick(pdb, 'apiVersion'), 'policy/v1');
  assert.equal(pick(pdb, 'spec.minAvailable'), 1);
  assert.deepEqual(
    pick(pdb, 'spec.selector.matchLabels'),
    pick(m.get('Deployment'), 'spec.template.metadata.labels'),
  );

  const controller = render((v) => {
    v.replicaCount = 3;
    (v.kubernetes as Manifest).enabled = true;
  });
  assert.equal(pick(controller.get('Deployment'), 'spec.replicas'), 3);
  assert.ok(controller.has('PodDisruptionBudget'));
  // One pod: no budget (it would block every node drain); disabled: none.
  assert.equal(render().has('PodDisruptionBudget'), false);
  const off = render((v) => {
    v.replicaCount = 2;
    etcd(v);
    (v.podDisruptionBudget as Manifest).enabled = false;
  });
  assert.equal(off.has('PodDisruptionBudget'), false);
});

test('F16: serviceMonitor.enabled renders a ServiceMonitor scraping /metrics with the metrics token, not the admin password', () => {
  const m = render((v) => ((v.serviceMonitor as Manifest).enabled = true));
  const monitor = m.get('ServiceMonitor');
  assert.equal(pick(monitor, 'apiVersion'), 'monitoring.coreos.com/v1');
  const endpoint = list(monitor, 'spec.endpoints')[0];
  assert.equal(pick(endpoint, 'port'), 'admin');
  assert.equal(pick(endpoint, 'path'), '/metrics');
  assert.deepEqual(pick(endpoint, 'authorization'), {
    type: 'Bearer',
    credentials: { name: 'edge', key: 'metrics-token' },
  });
  // The ServiceMonitor selects the metrics Service (admin port), not the data-plane one.
  const selector = pick(monitor, 'spec.selector.matchLabels') as Record<string, string>;
  const selects = (s: unknown): boolean =>
    Object.entries(selector).every(
      ([k, v]) => (pick(s, 'metadata.labels') as Record<string, string>)[k] === v,
    );
  const metrics = m.get('Service/edge-metrics');
  assert.ok(selects(metrics));
  assert.equal(selects(m.get('Service/edge')), false);
  assert.deepEqual(
    list(metrics, 'spec.ports').map((p) => [p.name, p.targetPort]),
    [['admin', 'admin']],
  );
  assert.deepEqual(pick(metrics, 'spec.selector'), pick(m.get('Deployment'), 'spec.selector.matchLabels'));
  // The token: in the Secret, in the pod's environment, and what system.yaml accepts for /metrics.
  const token = secretData(m.get('Secret'))['metrics-token'] ?? '';
  assert.equal(token.length, 32);
  const env = list(m.get('Deployment'), `${CONTAINER}.env`).find((e) => e.name === 'METRICS_TOKEN');
  assert.deepEqual(pick(env, 'valueFrom.secretKeyRef'), { name: 'edge', key: 'metrics-token' });
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), {
    ADMIN_PASSWORD: 'admin-secret',
    METRICS_TOKEN: token,
  });
  assert.equal(system.admin?.metrics_auth?.bearer_token, token);
  assert.equal(render().has('ServiceMonitor'), false, 'off by default');
});

test('F16: readOnlyRootFilesystem, with emptyDir volumes where the gateway writes (beside gateway.yaml, /tmp, ACME)', () => {
  const m = render();
  const pod = pick(m.get('Deployment'), 'spec.template.spec');
  assert.equal(pick(pod, 'containers.0.securityContext.readOnlyRootFilesystem'), true);
  const volumes = Object.fromEntries(list(pod, 'volumes').map((v) => [String(v.name), v]));
  const mounts = list(pod, 'containers.0.volumeMounts');
  const at = (path: string): Manifest | undefined => mounts.find((x) => x.mountPath === path);
  const args = pick(pod, 'containers.0.args') as string[];
  const gatewayPath = args[args.indexOf('--gateway-config') + 1] ?? '';
  const systemPath = args[args.indexOf('--system-config') + 1] ?? '';
  // The two files come read-only from the ConfigMap …
  for (const [path, key] of [
    [systemPath, 'system.yaml'],
    [gatewayPath, 'gateway.yaml'],
  ] as const) {
    assert.equal(at(path)?.subPath, key, path);
    assert.equal(at(path)?.readOnly, true);
    assert.ok(pick(volumes[String(at(path)?.name)], 'configMap'), `${path} from the ConfigMap`);
  }
  // … in a writable emptyDir: gateway.yaml.history/ and gateway.yaml.audit.jsonl go beside gateway.yaml.
  const dir = gatewayPath.slice(0, gatewayPath.lastIndexOf('/'));
  assert.deepEqual(pick(volumes[String(at(dir)?.name)], 'emptyDir'), {});
  assert.notEqual(at(dir)?.readOnly, true);
  assert.deepEqual(pick(volumes[String(at('/tmp')?.name)], 'emptyDir'), {});
  assert.equal(at(DEFAULT_ACME_DIR), undefined, 'no ACME: no ACME directory');

  // ACME with the filesystem storage: its directory (the default, or storage.dir) is writable.
  const acme = render((v) => (sys(v).acme = { contact: ['mailto:ops@example.com'] }));
  const acmeMounts = list(acme.get('Deployment'), `${CONTAINER}.volumeMounts`);
  assert.ok(acmeMounts.some((x) => x.mountPath === DEFAULT_ACME_DIR));
  const custom = render((v) => (sys(v).acme = { storage: { type: 'filesystem', dir: '/var/acme' } }));
  assert.ok(
    list(custom.get('Deployment'), `${CONTAINER}.volumeMounts`).some((x) => x.mountPath === '/var/acme'),
  );
});

test('F16: the whole system.yaml comes from config.system and passes the gateway system-config validator', () => {
  // Defaults: the shipped config/system.yaml's settings, with the pod's listeners and a JSON log.
  const defaultsParsed = parseSystemConfig(file(render().get('ConfigMap'), 'system.yaml'), {
    ADMIN_PASSWORD: 'x',
  });
  assert.deepEqual(defaultsParsed.http2, shipped.http2);
  assert.deepEqual(defaultsParsed.timeouts, shipped.timeouts);
  assert.deepEqual(defaultsParsed.debug, shipped.debug);
  assert.equal(defaultsParsed.workers, shipped.workers);
  assert.deepEqual(defaultsParsed.access_log, shipped.access_log);
  assert.equal(defaultsParsed.admin?.ui_enabled, shipped.admin?.ui_enabled);
  assert.equal(defaultsParsed.logging.format, 'json');

  const m = render((v) => {
    const s = sys(v);
    s.access_log = { output: 'stdout', format: 'combined' };
    s.workers = 2;
    s.debug = { enabled: true };
    s.http2 = { enabled: false };
    s.logging = { level: 'debug', format: 'text' };
    (s.timeouts as Manifest).shutdown_timeout_seconds = 50;
    (s.admin as Manifest).metrics_auth = { username: 'prometheus', password: '${METRICS_PASSWORD}' };
    s.tls = { cert_path: '/app/tls/tls.crt', key_path: '/app/tls/tls.key' };
    v.extraVolumes = [{ name: 'tls', secret: { secretName: 'edge-tls' } }];
    v.extraVolumeMounts = [{ name: 'tls', mountPath: '/app/tls', readOnly: true }];
  });
  const system = parseSystemConfig(file(m.get('ConfigMap'), 'system.yaml'), {
    ADMIN_PASSWORD: 'x',
    METRICS_PASSWORD: 'scrape-secret',
  });
  assert.deepEqual(system.access_log.output, 'stdout');
  assert.equal(system.access_log.format, 'combined');
  assert.equal(system.workers, 2);
  assert.equal(system.debug.enabled, true);
  assert.equal(system.http2.enabled, false);
  assert.deepEqual(system.logging, { level: 'debug', format: 'text' });
  assert.deepEqual(system.admin?.metrics_auth, { username: 'prometheus', password: 'scrape-secret' });
  assert.equal(system.tls?.cert_path, '/app/tls/tls.crt');
  // The ports stay those of the container, and the drain margin follows the shutdown timeout.
  assert.equal(system.listener.port, defaults.ports.http);
  assert.equal(system.admin?.port, defaults.ports.admin);
  const pod = pick(m.get('Deployment'), 'spec.template.spec');
  assert.equal(pick(pod, 'terminationGracePeriodSeconds'), 55);
  assert.deepEqual(pick(pod, 'volumes'), [
    ...list(pod, 'volumes').slice(0, -1),
    { name: 'tls', secret: { secretName: 'edge-tls' } },
  ]);
  assert.ok(list(pod, 'containers.0.volumeMounts').some((x) => x.mountPath === '/app/tls'));
  // Any change to system.yaml rolls the pods.
  assert.notEqual(podAnnotations(m)['checksum/config'], podAnnotations(render())['checksum/config']);
  assert.notEqual(
    podAnnotations(render((v) => (v.ports = { http: 18080, admin: 9090 })))['checksum/config'],
    podAnnotations(render())['checksum/config'],
  );
});

test('F16: the gateway runs on the rendered files laid out as in the pod: /hello, /readyz, /metrics with the token, history beside gateway.yaml', async () => {
  const [http, admin] = [await freePort(), await freePort()];
  const m = render((v) => {
    fileSource(v);
    v.ports = { http, admin };
    (v.serviceMonitor as Manifest).enabled = true;
  });
  const secret = secretData(m.get('Secret'));
  const configMap = m.get('ConfigMap');
  // /app/config: the emptyDir, with the two ConfigMap files mounted read-only inside it.
  const dir = tempDir('switchyard-helm-');
  const config = join(dir.path, 'config');
  mkdirSync(config);
  for (const name of ['system.yaml', 'gateway.yaml']) {
    writeFileSync(join(config, name), file(configMap, name));
    chmodSync(join(config, name), 0o444);
  }
  const args = pick(m.get('Deployment'), `${CONTAINER}.args`) as string[];
  const gw = spawnGateway(
    args.map((a) => a.replace('/app/config', config)),
    {
      ADMIN_USER: secret['admin-username'],
      ADMIN_PASSWORD: secret['admin-password'],
      METRICS_TOKEN: secret['metrics-token'],
    },
  );
  try {
    await waitForHttp(`http://127.0.0.1:${admin}/healthz`, 60_000);
    const ready = await fetch(`http://127.0.0.1:${admin}/readyz`);
    assert.equal(ready.status, 200, gw.output());
    const hello = await fetch(`http://127.0.0.1:${http}/hello`);
    assert.equal(hello.status, 200);
    assert.deepEqual(await hello.json(), { message: 'hello from switchyard' });
    const bearer = { authorization: `Bearer ${secret['metrics-token']}` };
    const metrics = await fetch(`http://127.0.0.1:${admin}/metrics`, { headers: bearer });
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /^# (HELP|TYPE) /m);
    assert.equal((await fetch(`http://127.0.0.1:${admin}/metrics`)).status, 401);
    // The token opens /metrics only; the Admin API wants the admin password.
    assert.equal((await fetch(`http://127.0.0.1:${admin}/api/routes`, { headers: bearer })).status, 401);
    const basic = `Basic ${Buffer.from(`${secret['admin-username']}:${secret['admin-password']}`).toString('base64')}`;
    assert.equal(
      (await fetch(`http://127.0.0.1:${admin}/api/routes`, { headers: { authorization: basic } })).status,
      200,
    );
    // What the gateway writes goes beside gateway.yaml, in the emptyDir.
    assert.ok(existsSync(join(config, 'gateway.yaml.history')), 'gateway.yaml.history/ beside gateway.yaml');
    assert.doesNotMatch(gw.output(), /cannot write the configuration history/);
  } finally {
    await gw.stop();
    dir.remove();
  }
});

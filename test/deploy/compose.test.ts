import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { compileWith } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
interface Service {
  build?: string;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
}
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yaml'), 'utf8')) as {
  services: Record<string, Service>;
};
const gateway = compose.services.gateway ?? {};
/** `./deploy/compose:/app/config` → the host folder mounted as the image's config volume. */
const mounted = (gateway.volumes ?? []).find((v) => v.endsWith(':/app/config'))?.split(':')[0] ?? '';

test('compose: the gateway is built from the Dockerfile beside it, with Redis and etcd healthy first', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ['etcd', 'gateway', 'redis']);
  assert.equal(gateway.build, '.');
  assert.ok(existsSync(join(ROOT, 'Dockerfile')));
  for (const dep of ['redis', 'etcd']) {
    assert.equal(gateway.depends_on?.[dep]?.condition, 'service_healthy');
    assert.ok((compose.services[dep]?.healthcheck?.test.length ?? 0) > 0, `${dep} has a health check`);
  }
});

test('compose: the mounted system.yaml is valid and its listeners are the published ports', () => {
  assert.ok(mounted !== '' && existsSync(join(ROOT, mounted, 'system.yaml')), `mounted folder ${mounted}`);
  const system = parseSystemConfig(readFileSync(join(ROOT, mounted, 'system.yaml'), 'utf8'), {
    ADMIN_PASSWORD: 'from-compose',
  });
  const published = (gateway.ports ?? []).map((p) => Number(p.split(':').at(-1)));
  assert.deepEqual(published, [system.listener.port, system.admin?.port]);
  assert.equal(system.admin?.bind, '0.0.0.0', 'the published admin port reaches the listener');
  assert.equal(system.config.source, 'etcd');
  assert.deepEqual(system.config.etcd?.endpoints, ['http://etcd:2379']);
  // Longer than the drain, so `docker compose stop` does not cut in-flight requests.
  assert.ok(
    Number.parseInt(String(gateway.stop_grace_period), 10) > system.timeouts.shutdown_timeout_seconds,
  );
});

test('compose: the seed gateway.yaml compiles and keeps its counters in the redis service', () => {
  const config = parseGatewayConfig(readFileSync(join(ROOT, mounted, 'gateway.yaml'), 'utf8'));
  assert.equal(config.stores[0]?.url, 'redis://redis:6379');
  const runtime = compileWith(config, silentLogger, {});
  assert.deepEqual(runtime.warnings, []);
  assert.equal(runtime.router.size, 1);
  void runtime.close();
});

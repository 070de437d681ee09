/** The upstream node's `discovery` block is checked at load, each error at its key (docs/service-discovery.md). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { upstream } from '../../../src/plugins/core/upstream.js';
import { ConfigError } from '../../../src/core/plugin.js';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { instantiate } from '../../support/plugin-env.js';

/** The key path a rejected config names. */
function rejectedAt(config: unknown): string {
  try {
    void instantiate(upstream, config).close?.();
  } catch (err) {
    if (err instanceof ConfigError) return err.path;
    if (err instanceof ConfigRejected) return err.issues.map((i) => i.path).join(' ');
    throw err;
  }
  return 'accepted';
}

const dns = { type: 'dns', host: 'web.test', port: 80, resolvers: ['127.0.0.1:1'] };

test('discovery config: targets and discovery are exclusive, and one of them is required', () => {
  assert.equal(rejectedAt({ targets: [{ host: '127.0.0.1', port: 80 }], discovery: dns }), 'discovery');
  assert.equal(rejectedAt({}), 'targets');
  assert.equal(rejectedAt({ discovery: dns }), 'accepted');
});

test('discovery config: dns needs host with port, or srv without port', () => {
  assert.equal(rejectedAt({ discovery: { type: 'dns', host: 'web.test' } }), 'discovery.port');
  assert.equal(
    rejectedAt({ discovery: { type: 'dns', srv: '_http._tcp.web.test', port: 80 } }),
    'discovery.port',
  );
  assert.equal(
    rejectedAt({ discovery: { type: 'dns', host: 'a.test', port: 80, srv: '_http._tcp.a.test' } }),
    'discovery.srv',
  );
  assert.equal(rejectedAt({ discovery: { type: 'dns', srv: 'web.test' } }), 'discovery.srv');
  assert.equal(rejectedAt({ discovery: { type: 'dns', host: '10.0.0.1', port: 80 } }), 'discovery.host');
  assert.equal(
    rejectedAt({ discovery: { ...dns, resolvers: ['127.0.0.1:1', 'dns.example'] } }),
    'discovery.resolvers[1]',
  );
  assert.equal(rejectedAt({ discovery: { ...dns, min_ttl_s: 60, max_ttl_s: 30 } }), 'discovery.min_ttl_s');
  assert.equal(rejectedAt({ discovery: { ...dns, resolvers: ['[::1]:5353', '127.0.0.1'] } }), 'accepted');
});

test('discovery config: a key of another type is refused, not ignored', () => {
  assert.equal(rejectedAt({ discovery: { ...dns, service: 'web' } }), 'discovery.service');
});

test('discovery config: consul needs an http(s) address and a service', () => {
  const consul = { type: 'consul', address: 'http://127.0.0.1:8500', service: 'web' };
  assert.equal(rejectedAt({ discovery: consul }), 'accepted');
  assert.equal(rejectedAt({ discovery: { ...consul, address: 'ftp://x' } }), 'discovery.address');
  assert.equal(
    rejectedAt({ discovery: { type: 'consul', address: 'http://127.0.0.1:8500' } }),
    'discovery.service',
  );
  assert.equal(rejectedAt({ discovery: { ...consul, port: 80 } }), 'discovery.port');
});

test('discovery config: eureka and nacos take their own keys only', () => {
  const eureka = { type: 'eureka', address: 'http://127.0.0.1:8761', service: 'web', refresh_s: 5 };
  const nacos = {
    type: 'nacos',
    address: 'http://127.0.0.1:8848',
    service: 'web',
    group: 'PROD',
    namespace_id: 'dev',
  };
  assert.equal(rejectedAt({ discovery: eureka }), 'accepted');
  assert.equal(rejectedAt({ discovery: nacos }), 'accepted');
  assert.equal(rejectedAt({ discovery: { ...eureka, group: 'PROD' } }), 'discovery.group');
  assert.equal(rejectedAt({ discovery: { ...nacos, refresh_s: 0 } }), 'discovery.refresh_s');
});

test('discovery config: gRPC upstreams keep static targets', () => {
  assert.equal(rejectedAt({ discovery: dns, scheme: 'grpc' }), 'discovery');
});

test('discovery config: kubernetes needs service as namespace/name and a port name or number', () => {
  const k8s = { type: 'kubernetes', service: 'shop/web', port: 'http' };
  assert.equal(rejectedAt({ discovery: k8s }), 'accepted');
  assert.equal(rejectedAt({ discovery: { ...k8s, port: 8080 } }), 'accepted');
  assert.equal(rejectedAt({ discovery: { ...k8s, service: 'web' } }), 'discovery.service');
  assert.equal(rejectedAt({ discovery: { ...k8s, service: 'Shop/web' } }), 'discovery.service');
  assert.equal(rejectedAt({ discovery: { type: 'kubernetes', service: 'shop/web' } }), 'discovery.port');
  assert.equal(rejectedAt({ discovery: { ...k8s, port: 70000 } }), 'discovery.port');
  assert.equal(rejectedAt({ discovery: { ...k8s, address: 'http://x' } }), 'discovery.address');
  assert.equal(rejectedAt({ discovery: { type: 'dns', host: 'web.test', port: 'http' } }), 'discovery.port');
});

// Issue 32 item 3: SwitchyardPolicy attached by an HTTPRoute ExtensionRef filter, SwitchyardConsumer
// with credentials from Secrets, SwitchyardGlobalRule; invalid graphs reported in the CRD status
// while the rest keeps serving. Against the test API server (test/kubernetes/harness.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { conditionOf, get, NS, routeCondition, startHarness, type Harness } from './harness.js';
import { waitFor } from '../support/wait.js';

let h: Harness;

before(async () => {
  h = await startHarness(['infra-backend-v1', 'infra-backend-v2'], { SECRET_FROM_ENV: 'leaked' });
});

after(async () => {
  await h?.close();
});

const b64 = (text: string) => Buffer.from(text).toString('base64');

function policyYaml(name: string, keyConfig: string): string {
  return `
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardPolicy
metadata: { name: ${name}, namespace: ${NS} }
spec:
  nodes:
    - { id: input, type: input }
    - { id: key, type: key-auth, config: ${keyConfig} }
    - { id: deny, type: client }
    - { id: output, type: output }
  edges:
    - { from: input.out, to: key.in }
    - { from: key.success, to: output.in }
    - { from: key.denied, to: deny.in }
`;
}

const ROUTE = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: guarded, namespace: ${NS} }
spec:
  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /guarded } }]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: { set: [{ name: x-before, value: header-filter-ran }] }
        - type: ExtensionRef
          extensionRef: { group: switchyard.dev, kind: SwitchyardPolicy, name: require-key }
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /missing-policy } }]
      filters:
        - type: ExtensionRef
          extensionRef: { group: switchyard.dev, kind: SwitchyardPolicy, name: does-not-exist }
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /open } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
`;

const CONSUMER = `
apiVersion: v1
kind: Secret
metadata: { name: alice-key, namespace: ${NS} }
type: Opaque
data: { key: ${b64('alice-secret-1')} }
---
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardConsumer
metadata: { name: alice, namespace: ${NS} }
spec:
  labels: { tier: gold }
  credentials:
    key-auth:
      key: { secretKeyRef: { name: alice-key, key: key } }
`;

test('issue 32 item 3: a SwitchyardPolicy attached by ExtensionRef runs key-auth (consumer key from a Secret) after the header filter, before the backends', async () => {
  h.api.applyYaml(policyYaml('require-key', '{ use_consumers: true }'));
  h.api.applyYaml(CONSUMER);
  h.api.applyYaml(ROUTE);
  await waitFor(() => conditionOf(h, 'SwitchyardPolicy', 'require-key')?.status === 'True', {
    timeoutMs: 15_000,
    what: 'the policy accepted',
  });
  assert.equal(conditionOf(h, 'SwitchyardPolicy', 'require-key')?.reason, 'Accepted');
  assert.equal(conditionOf(h, 'SwitchyardPolicy', 'require-key')?.observedGeneration, 1);
  await waitFor(() => conditionOf(h, 'SwitchyardConsumer', 'alice')?.status === 'True', {
    timeoutMs: 15_000,
    what: 'the consumer accepted',
  });
  await waitFor(async () => (await get(h, '/open')).echo?.pod === 'infra-backend-v2-pod-1', {
    timeoutMs: 15_000,
    what: 'the route served',
  });
  const denied = await get(h, '/guarded');
  assert.equal(denied.status, 401);
  assert.equal(h.seen.get('infra-backend-v1')?.length ?? 0, 0, 'a denied request never reaches the backend');
  assert.equal((await get(h, '/guarded', { headers: { 'x-api-key': 'wrong' } })).status, 401);
  const ok = await get(h, '/guarded', { headers: { 'x-api-key': 'alice-secret-1' } });
  assert.equal(ok.status, 200);
  assert.equal(ok.echo?.pod, 'infra-backend-v1-pod-1');
  assert.deepEqual(ok.echo?.headers['X-Consumer-Username'] ?? ok.echo?.headers['x-consumer-username'], [
    `${NS}/alice`,
  ]);
  assert.deepEqual(ok.echo?.headers['x-before'], ['header-filter-ran']);
  // An ExtensionRef to a policy that does not exist: that rule answers 500, the others serve.
  assert.equal((await get(h, '/missing-policy')).status, 500);
  assert.equal((await get(h, '/open')).status, 200);
  // The Secret rotates: the new key authenticates, the old one no longer does, without a restart.
  h.api.applyYaml(`
apiVersion: v1
kind: Secret
metadata: { name: alice-key, namespace: ${NS} }
type: Opaque
data: { key: ${b64('alice-secret-2')} }
`);
  await waitFor(
    async () => (await get(h, '/guarded', { headers: { 'x-api-key': 'alice-secret-2' } })).status === 200,
    { timeoutMs: 15_000, what: 'the rotated key' },
  );
  assert.equal((await get(h, '/guarded', { headers: { 'x-api-key': 'alice-secret-1' } })).status, 401);
});

test('issue 32 item 3: an invalid SwitchyardPolicy is Accepted False reason Invalid with the compiler message; its rule answers 500 and the rest keeps serving; fixed, it serves', async () => {
  h.api.applyYaml(policyYaml('require-key', '{ use_consumers: true, header_nmae: x-key }'));
  await waitFor(() => conditionOf(h, 'SwitchyardPolicy', 'require-key')?.status === 'False', {
    timeoutMs: 15_000,
    what: 'the policy rejected',
  });
  const c = conditionOf(h, 'SwitchyardPolicy', 'require-key');
  assert.equal(c?.reason, 'Invalid');
  // The compiler's message, with the key path inside the resource.
  assert.match(c?.message ?? '', /^spec\.nodes\[1\]\.config\.header_nmae: .*unknown key/);
  assert.equal(c?.observedGeneration, 2);
  await waitFor(async () => (await get(h, '/guarded')).status === 500, {
    timeoutMs: 15_000,
    what: 'the rule answering 500',
  });
  assert.equal(
    (await get(h, '/guarded', { headers: { 'x-api-key': 'alice-secret-2' } })).status,
    500,
    'no request passes a rule whose policy is invalid',
  );
  assert.equal((await get(h, '/open')).echo?.pod, 'infra-backend-v2-pod-1');
  assert.equal(routeCondition(h, 'guarded')?.status, 'True');
  // A graph with another output boundary is refused with the global-rule wording of the compiler.
  h.api.applyYaml(`
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardPolicy
metadata: { name: two-outputs, namespace: ${NS} }
spec:
  nodes:
    - { id: input, type: input }
    - { id: key, type: key-auth, config: { keys: [k] } }
    - { id: output, type: output }
    - { id: denied, type: output }
  edges:
    - { from: input.out, to: key.in }
    - { from: key.success, to: output.in }
    - { from: key.denied, to: denied.in }
`);
  await waitFor(() => conditionOf(h, 'SwitchyardPolicy', 'two-outputs')?.status === 'False', {
    timeoutMs: 15_000,
    what: 'two-outputs rejected',
  });
  assert.match(
    conditionOf(h, 'SwitchyardPolicy', 'two-outputs')?.message ?? '',
    /^spec: .*'denied'.*client node/,
  );
  // `${…}` would read the gateway's environment: refused before compiling.
  h.api.applyYaml(policyYaml('env-reader', "{ keys: ['${SECRET_FROM_ENV}'] }"));
  await waitFor(() => conditionOf(h, 'SwitchyardPolicy', 'env-reader')?.status === 'False', {
    timeoutMs: 15_000,
    what: 'env-reader rejected',
  });
  assert.match(
    conditionOf(h, 'SwitchyardPolicy', 'env-reader')?.message ?? '',
    /^spec\.nodes\[1\]\.config\.keys\[0\]: /,
  );
  // Fixed: served again.
  h.api.applyYaml(policyYaml('require-key', '{ use_consumers: true }'));
  await waitFor(
    async () => (await get(h, '/guarded', { headers: { 'x-api-key': 'alice-secret-2' } })).status === 200,
    { timeoutMs: 15_000, what: 'the fixed policy serving' },
  );
  assert.equal(conditionOf(h, 'SwitchyardPolicy', 'require-key')?.status, 'True');
  h.api.remove('SwitchyardPolicy', NS, 'two-outputs');
  h.api.remove('SwitchyardPolicy', NS, 'env-reader');
});

test('issue 32 item 3: a SwitchyardConsumer whose Secret is missing is Accepted False and its key does not authenticate', async () => {
  h.api.applyYaml(`
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardConsumer
metadata: { name: bob, namespace: ${NS} }
spec:
  credentials:
    key-auth:
      key: { secretKeyRef: { name: bob-key, key: key } }
`);
  await waitFor(() => conditionOf(h, 'SwitchyardConsumer', 'bob')?.status === 'False', {
    timeoutMs: 15_000,
    what: 'bob rejected',
  });
  const c = conditionOf(h, 'SwitchyardConsumer', 'bob');
  assert.equal(c?.reason, 'Invalid');
  assert.equal(c?.message, `spec.credentials.key-auth.key: Secret ${NS}/bob-key not found`);
  h.api.applyYaml(`
apiVersion: v1
kind: Secret
metadata: { name: bob-key, namespace: ${NS} }
type: Opaque
data: { key: ${b64('bob-secret')} }
`);
  await waitFor(
    async () => (await get(h, '/guarded', { headers: { 'x-api-key': 'bob-secret' } })).status === 200,
    { timeoutMs: 15_000, what: 'bob authenticating once the Secret exists' },
  );
  assert.equal(conditionOf(h, 'SwitchyardConsumer', 'bob')?.status, 'True');
  // The status never carries a Secret's value.
  const text = JSON.stringify(h.api.list('SwitchyardConsumer'));
  assert.doesNotMatch(text, /bob-secret|alice-secret/);
});

test('issue 32 item 3: a SwitchyardGlobalRule runs its policy (with params) on every route; one naming a missing policy is Accepted False', async () => {
  h.api.applyYaml(`
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardPolicy
metadata: { name: stamp, namespace: ${NS} }
spec:
  params:
    tag: { type: string, default: none }
  nodes:
    - { id: input, type: input }
    - { id: mark, type: proxy-rewrite, config: { headers: { set: { x-global-tag: '{{params.tag}}' } } } }
    - { id: output, type: output }
  edges:
    - { from: input.out, to: mark.in }
    - { from: mark.success, to: output.in }
---
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardGlobalRule
metadata: { name: stamp-all, namespace: ${NS} }
spec: { policy: stamp, params: { tag: edge-1 } }
---
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardGlobalRule
metadata: { name: dangling, namespace: ${NS} }
spec: { policy: nope }
`);
  await waitFor(async () => (await get(h, '/open')).echo?.headers['x-global-tag']?.[0] === 'edge-1', {
    timeoutMs: 15_000,
    what: 'the global rule applied',
  });
  await waitFor(
    () =>
      conditionOf(h, 'SwitchyardGlobalRule', 'dangling') !== undefined &&
      conditionOf(h, 'SwitchyardGlobalRule', 'stamp-all') !== undefined,
    {
      timeoutMs: 15_000,
      what: 'the global rule statuses',
    },
  );
  assert.equal(conditionOf(h, 'SwitchyardGlobalRule', 'stamp-all')?.status, 'True');
  const dangling = conditionOf(h, 'SwitchyardGlobalRule', 'dangling');
  assert.equal(dangling?.status, 'False');
  assert.equal(dangling?.message, `spec.policy: SwitchyardPolicy ${NS}/nope not found`);
  // Also on the rule with an ExtensionRef (the global rule runs first).
  const guarded = await get(h, '/guarded', { headers: { 'x-api-key': 'alice-secret-2' } });
  assert.equal(guarded.echo?.headers['x-global-tag']?.[0], 'edge-1');
  // A param of the wrong type: Accepted False with the compiler's key path; the others keep running.
  h.api.applyYaml(`
apiVersion: switchyard.dev/v1alpha1
kind: SwitchyardGlobalRule
metadata: { name: stamp-bad, namespace: ${NS} }
spec: { policy: stamp, params: { tag: 5 } }
`);
  await waitFor(() => conditionOf(h, 'SwitchyardGlobalRule', 'stamp-bad')?.status === 'False', {
    timeoutMs: 15_000,
    what: 'stamp-bad rejected',
  });
  assert.match(conditionOf(h, 'SwitchyardGlobalRule', 'stamp-bad')?.message ?? '', /^params\.tag: /);
  assert.equal((await get(h, '/open')).echo?.headers['x-global-tag']?.[0], 'edge-1');
  for (const name of ['stamp-all', 'dangling', 'stamp-bad']) h.api.remove('SwitchyardGlobalRule', NS, name);
  await waitFor(async () => (await get(h, '/open')).echo?.headers['x-global-tag'] === undefined, {
    timeoutMs: 15_000,
    what: 'the global rule removed',
  });
});

// Issue 32 item 2: the HTTPRoute filters CORS (HTTPCORSFilter), RequestMirror and the rule
// `timeouts`, with the upstream conformance manifests (fixtures/conformance/, copied unchanged) and
// the expectations of their Go tests (HTTPRouteCORS, HTTPRouteRequestMirror,
// HTTPRouteRequestMultipleMirrors, HTTPRouteTimeoutRequest, HTTPRouteTimeoutBackendRequest).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { get, NS, routeCondition, startHarness, type Harness } from './harness.js';
import { waitFor } from '../support/wait.js';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'conformance');
let h: Harness;

before(async () => {
  h = await startHarness();
});

after(async () => {
  await h?.close();
});

async function applyCase(file: string, routes: string[]): Promise<void> {
  h.api.applyYaml(readFileSync(join(FIXTURES, file), 'utf8'));
  await waitFor(
    () =>
      routes.every(
        (r) =>
          routeCondition(h, r)?.status === 'True' && routeCondition(h, r, 'ResolvedRefs')?.status === 'True',
      ),
    { timeoutMs: 15_000, what: `${routes.join(', ')} accepted` },
  );
}

/** A request with any header (Origin included), answered with status and headers. */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(path, h.base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The suite's ValidHeaderValues with IgnoreWhitespace: one of the values, spaces ignored. */
function oneOf(actual: string | string[] | undefined, valid: string[], what: string): void {
  const text = (Array.isArray(actual) ? actual.join(',') : (actual ?? '')).replace(/\s/g, '');
  assert.ok(
    valid.map((v) => v.replace(/\s/g, '')).includes(text),
    `${what}: ${JSON.stringify(actual)} not in ${JSON.stringify(valid)}`,
  );
}

test('HTTPRouteCORS: preflights and simple requests answered as the suite expects', async () => {
  await applyCase('httproute-cors.yaml', [
    'cors-multiple-origins-methods-headers',
    'cors-wildcard-methods',
    'cors-wildcard-origin',
    'cors-wildcard-methods-headers',
  ]);
  await waitFor(async () => (await get(h, '/cors-1')).status === 200, { timeoutMs: 15_000, what: 'routing' });
  const request = {
    'access-control-request-method': 'GET',
    'access-control-request-headers': 'x-header-1, x-header-2',
  };
  // Preflights from an exact origin, a wildcard one, and one with more labels left of `*`.
  for (const origin of ['https://www.foo.com', 'https://www.bar.com', 'https://xpto.www.bar.com']) {
    const r = await raw('OPTIONS', '/cors-1', { Origin: origin, ...request });
    assert.ok([200, 204].includes(r.status), `${origin}: ${r.status}`);
    assert.equal(r.headers['access-control-allow-origin'], origin);
    oneOf(r.headers['access-control-allow-methods'], ['GET, OPTIONS', 'OPTIONS, GET'], 'allow-methods');
    oneOf(
      r.headers['access-control-allow-headers'],
      ['x-header-1, x-header-2', 'x-header-2, x-header-1'],
      'allow-headers',
    );
    oneOf(
      r.headers['access-control-expose-headers'],
      ['x-header-3, x-header-4', 'x-header-4, x-header-3'],
      'expose',
    );
    assert.equal(r.headers['access-control-max-age'], '3600');
    assert.equal(r.headers['access-control-allow-credentials'], 'true');
  }
  const denied = await raw('OPTIONS', '/cors-1', {
    Origin: 'https://foobar.com',
    'access-control-request-method': 'GET',
  });
  assert.ok([200, 204, 403].includes(denied.status));
  assert.equal(denied.headers['access-control-allow-origin'], undefined);
  // Simple requests reach the backend with the CORS answer headers.
  for (const origin of ['https://www.foo.com', 'https://www.bar.com']) {
    const r = await raw('GET', '/cors-1', { Origin: origin, ...request });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], origin);
  }
  assert.equal(
    (await raw('GET', '/cors-1', { Origin: 'https://foobar.com', 'access-control-request-method': 'GET' }))
      .headers['access-control-allow-origin'],
    undefined,
  );
  // allowMethods ["*"]: POST allowed; no credentials header without allowCredentials.
  const post = await raw('OPTIONS', '/cors-2', {
    Origin: 'https://www.foo.com',
    'access-control-request-method': 'POST',
  });
  assert.ok([200, 204].includes(post.status));
  oneOf(post.headers['access-control-allow-methods'], ['POST', '*'], 'allow-methods');
  assert.equal(post.headers['access-control-allow-origin'], 'https://www.foo.com');
  assert.equal(post.headers['access-control-allow-credentials'], undefined);
  // allowOrigins ["*"]: `*` or the origin (with its port).
  const wild = await raw('OPTIONS', '/cors-wildcard-origin', {
    Origin: 'https://foobar.com:12345',
    'access-control-request-method': 'PUT',
  });
  assert.ok([200, 204].includes(wild.status));
  oneOf(wild.headers['access-control-allow-origin'], ['https://foobar.com:12345', '*'], 'allow-origin');
  oneOf(wild.headers['access-control-allow-methods'], ['PUT'], 'allow-methods');
  assert.equal(wild.headers['access-control-allow-credentials'], undefined);
  for (const origin of ['https://foobar.com:12345', 'https://foobar.com']) {
    const r = await raw('PUT', '/cors-wildcard-origin', { Origin: origin });
    assert.equal(r.status, 200);
    oneOf(r.headers['access-control-allow-origin'], [origin, '*'], 'allow-origin');
    assert.equal(r.headers['access-control-allow-credentials'], undefined);
  }
  // Wildcards with allowCredentials: the origin, method and headers are echoed, never `*`.
  const cred = await raw('OPTIONS', '/cors-wildcard-methods-headers', {
    Origin: 'https://other.foo.com',
    'access-control-request-method': 'PUT',
    'access-control-request-headers': 'x-header-1, x-header-2',
  });
  assert.ok([200, 204].includes(cred.status));
  assert.equal(cred.headers['access-control-allow-origin'], 'https://other.foo.com');
  oneOf(cred.headers['access-control-allow-methods'], ['PUT'], 'allow-methods');
  oneOf(
    cred.headers['access-control-allow-headers'],
    ['x-header-1, x-header-2', 'x-header-2, x-header-1'],
    'allow-headers',
  );
  assert.equal(cred.headers['access-control-allow-credentials'], 'true');
  const unauth = await raw('OPTIONS', '/cors-wildcard-methods-headers-unauth', {
    Origin: 'https://other.foo.com',
    'access-control-request-method': 'PUT',
    'access-control-request-headers': 'x-header-1, x-header-2',
  });
  oneOf(unauth.headers['access-control-allow-origin'], ['https://other.foo.com', '*'], 'allow-origin');
  oneOf(unauth.headers['access-control-allow-methods'], ['PUT', '*'], 'allow-methods');
  oneOf(
    unauth.headers['access-control-allow-headers'],
    ['x-header-1, x-header-2', 'x-header-2, x-header-1', '*'],
    'allow-headers',
  );
  assert.equal(unauth.headers['access-control-allow-credentials'], undefined);
  const simpleCred = await raw('GET', '/cors-wildcard-methods-headers', { Origin: 'https://other.foo.com' });
  assert.equal(simpleCred.status, 200);
  assert.equal(simpleCred.headers['access-control-allow-origin'], 'https://other.foo.com');
  assert.equal(simpleCred.headers['access-control-allow-credentials'], 'true');
  const simpleUnauth = await raw('GET', '/cors-wildcard-methods-headers-unauth', {
    Origin: 'https://other.foo.com',
  });
  assert.equal(simpleUnauth.status, 200);
  oneOf(simpleUnauth.headers['access-control-allow-origin'], ['https://other.foo.com', '*'], 'allow-origin');
  assert.equal(simpleUnauth.headers['access-control-allow-credentials'], undefined);
});

/** The mirrored copies a backend received for a path (the suite checks the mirror pod's log). */
const copies = (backend: string, path: string) =>
  (h.seen.get(backend) ?? []).filter((e) => e.path.split('?')[0] === path);

test('HTTPRouteRequestMirror and HTTPRouteRequestMultipleMirrors: v1 answers, v2 (and v3) receive the copy, with the header changes', async () => {
  await applyCase('httproute-request-mirror.yaml', ['request-mirror']);
  await applyCase('httproute-request-multiple-mirrors.yaml', ['request-multiple-mirrors']);
  await waitFor(async () => (await get(h, '/mirror')).echo?.pod === 'infra-backend-v1-pod-1', {
    timeoutMs: 15_000,
    what: 'routing',
  });
  const id = `?request-id=${Date.now()}`;
  const r = await get(h, `/mirror${id}`);
  assert.equal(r.echo?.pod, 'infra-backend-v1-pod-1');
  assert.equal(r.echo?.path, `/mirror${id}`);
  await waitFor(() => copies('infra-backend-v2', '/mirror').some((e) => e.path === `/mirror${id}`), {
    timeoutMs: 10_000,
    what: 'the mirrored copy on v2',
  });
  const headers = { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' };
  const modified = await get(h, '/mirror-and-modify-headers', { headers });
  assert.equal(modified.echo?.pod, 'infra-backend-v1-pod-1');
  await waitFor(() => copies('infra-backend-v2', '/mirror-and-modify-headers').length > 0, {
    timeoutMs: 10_000,
    what: 'the modified copy on v2',
  });
  for (const echo of [modified.echo, copies('infra-backend-v2', '/mirror-and-modify-headers')[0]]) {
    const lower = Object.fromEntries(
      Object.entries(echo?.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v.join(',')]),
    );
    assert.equal(lower['x-header-set'], 'set-overwrites-values');
    assert.equal(lower['x-header-add'], 'header-val-1');
    assert.equal(lower['x-header-add-append'], 'append-val-1,header-val-2');
    assert.equal(lower['x-header-remove'], undefined);
  }
  // Two mirrors: both v2 and v3 receive a copy, v1 answers.
  const multi = await get(h, '/multi-mirror-and-modify-request-headers', { headers });
  assert.equal(multi.echo?.pod, 'infra-backend-v1-pod-1');
  await waitFor(
    () =>
      copies('infra-backend-v2', '/multi-mirror-and-modify-request-headers').length > 0 &&
      copies('infra-backend-v3', '/multi-mirror-and-modify-request-headers').length > 0,
    { timeoutMs: 10_000, what: 'copies on v2 and v3' },
  );
  assert.equal((await get(h, '/multi-mirror')).echo?.pod, 'infra-backend-v1-pod-1');
  await waitFor(() => copies('infra-backend-v3', '/multi-mirror').length > 0, {
    timeoutMs: 10_000,
    what: 'the /multi-mirror copy on v3',
  });
  assert.equal(copies('infra-backend-v1', '/multi-mirror').length, 1, 'the primary is sent once');
});

test('HTTPRouteTimeoutRequest and HTTPRouteTimeoutBackendRequest: 500ms → 504 for a 1s backend, 0s disables', async () => {
  await applyCase('httproute-timeout-request.yaml', ['request-timeout']);
  await applyCase('httproute-timeout-backend-request.yaml', ['backend-request-timeout']);
  await waitFor(async () => (await get(h, '/request-timeout')).status === 200, {
    timeoutMs: 15_000,
    what: 'routing',
  });
  await waitFor(async () => (await get(h, '/backend-timeout')).status === 200, {
    timeoutMs: 15_000,
    what: 'routing',
  });
  assert.equal((await get(h, '/request-timeout?delay=1s')).status, 504);
  assert.equal((await get(h, '/disable-request-timeout?delay=1s')).status, 200);
  assert.equal((await get(h, '/backend-timeout?delay=1s')).status, 504);
  assert.equal((await get(h, '/disable-backend-timeout?delay=1s')).status, 200);
  assert.equal(routeCondition(h, 'request-timeout', 'ResolvedRefs')?.status, 'True');
  assert.equal(NS, 'gateway-conformance-infra');
});

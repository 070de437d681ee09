import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HeaderMap } from '../../src/core/context.js';
import type { ResolvedMatch, RouteEntry } from '../../src/engine/router.js';
import { compileRouter, validateRouteMatch } from '../../src/engine/router.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';

interface Request {
  method?: string;
  host?: string;
  path: string;
  headers?: HeaderMap;
}

/** Builds a table from `[name, match]` pairs; each route's target is its name. */
function table(...routes: [string, ResolvedMatch][]): RouteEntry<string>[] {
  return routes.map(([name, match]) => ({ name, match, target: name }));
}

function route(routes: RouteEntry<string>[], req: Request): string | undefined {
  return compileRouter(routes).match(req.method ?? 'GET', req.host, req.path, req.headers ?? {})?.name;
}

function matches(match: ResolvedMatch, req: Request): boolean {
  return route(table(['r', match]), req) === 'r';
}

test('router: a route without match.path matches any path', () => {
  for (const path of ['/', '/a', '/a/b/c', '*', '']) assert.ok(matches({}, { path }), path);
});

test('router: an exact path matches only that exact path', () => {
  const m = { path: '/a/b' };
  assert.ok(matches(m, { path: '/a/b' }));
  for (const path of ['/a', '/a/b/', '/a/b/c', '/a/bc', '/A/b']) assert.ok(!matches(m, { path }), path);
});

test("router: '/' matches only the root path", () => {
  assert.ok(matches({ path: '/' }, { path: '/' }));
  assert.ok(!matches({ path: '/' }, { path: '/a' }));
  assert.ok(!matches({ path: '/' }, { path: '//' }));
});

test('router: /api/v1/* matches the bare prefix /api/v1', () => {
  assert.ok(matches({ path: '/api/v1/*' }, { path: '/api/v1' }));
});

test('router: /api/v1/* matches /api/v1/ and paths below it', () => {
  for (const path of ['/api/v1/', '/api/v1/x', '/api/v1/x/y']) {
    assert.ok(matches({ path: '/api/v1/*' }, { path }), path);
  }
});

test('router: /api/v1/* does not match /api/v10 or /api', () => {
  for (const path of ['/api/v10', '/api/v10/x', '/api', '/api/', '/v1']) {
    assert.ok(!matches({ path: '/api/v1/*' }, { path }), path);
  }
});

test('router: a * segment matches exactly one segment with an equal segment count', () => {
  const m = { path: '/users/*/orders' };
  assert.ok(matches(m, { path: '/users/42/orders' }));
  for (const path of ['/users/orders', '/users/1/2/orders', '/users/42/orders/x', '/users/42/orders/']) {
    assert.ok(!matches(m, { path }), path);
  }
});

test('router: /* alone matches every path', () => {
  for (const path of ['/', '/a', '/a/b/c/', '//', '*', ''])
    assert.ok(matches({ path: '/*' }, { path }), path);
});

test('router: * segments combine with a trailing /* prefix', () => {
  const m = { path: '/users/*/orders/*' };
  for (const path of ['/users/1/orders', '/users/1/orders/', '/users/1/orders/9/items']) {
    assert.ok(matches(m, { path }), path);
  }
  for (const path of ['/users/1', '/users/1/order', '/users/orders']) assert.ok(!matches(m, { path }), path);
});

test('router: a path without a leading slash matches only path-less and /* routes', () => {
  const routes = table(['exact', { path: '/x' }], ['deep', { path: '/x/*' }], ['all', { path: '/*' }]);
  assert.equal(route(routes, { path: '*' }), 'all');
  assert.equal(route(routes, { path: 'x' }), 'all');
});

test('router: methods compare case-insensitively on both sides', () => {
  const m = { methods: ['get', 'Post'] };
  for (const method of ['GET', 'get', 'POST', 'post']) assert.ok(matches(m, { path: '/', method }), method);
  assert.ok(matches({ methods: ['GET'] }, { path: '/', method: 'gEt' }));
});

test('router: a method outside the list does not match (E2E-DP-03)', () => {
  assert.ok(!matches({ methods: ['GET'] }, { path: '/', method: 'DELETE' }));
});

test('router: empty or absent methods match any method', () => {
  for (const method of ['GET', 'PATCH', 'PURGE']) {
    assert.ok(matches({ methods: [] }, { path: '/', method }), method);
    assert.ok(matches({}, { path: '/', method }), method);
  }
});

test('router: header names are case-insensitive and values exact', () => {
  const m = { headers: { 'X-Tenant': 'Acme' } };
  assert.ok(matches(m, { path: '/', headers: { 'x-tenant': 'Acme' } }));
  assert.ok(!matches(m, { path: '/', headers: { 'x-tenant': 'acme' } }));
  assert.ok(!matches(m, { path: '/', headers: { 'x-tenant': 'Acme ' } }));
});

test('router: a missing header fails the route', () => {
  assert.ok(!matches({ headers: { 'x-a': '1' } }, { path: '/', headers: { 'x-b': '1' } }));
  assert.ok(!matches({ headers: { 'x-a': '' } }, { path: '/', headers: {} }));
});

test('router: a repeated header is matched on its first value', () => {
  const m = { headers: { 'x-a': '1' } };
  assert.ok(matches(m, { path: '/', headers: { 'x-a': ['1', '2'] } }));
  assert.ok(!matches(m, { path: '/', headers: { 'x-a': ['2', '1'] } }));
  assert.ok(!matches(m, { path: '/', headers: { 'x-a': [] } }));
});

test('router: every listed header must hold', () => {
  const m = { headers: { 'x-a': '1', 'x-b': '2' } };
  assert.ok(matches(m, { path: '/', headers: { 'x-a': '1', 'x-b': '2' } }));
  assert.ok(!matches(m, { path: '/', headers: { 'x-a': '1' } }));
});

test('router: host compares case-insensitively and ignores the request port', () => {
  const m = { host: 'Example.COM' };
  for (const host of ['example.com', 'EXAMPLE.com', 'example.com:8080'])
    assert.ok(matches(m, { path: '/', host }), host);
  for (const host of ['example.org', 'a.example.com', 'example.com.evil']) {
    assert.ok(!matches(m, { path: '/', host }), host);
  }
});

test('router: host ignores the port of a bracketed IPv6 address', () => {
  for (const pattern of ['[::1]', '::1']) {
    for (const host of ['[::1]:8080', '[::1]', '::1']) {
      assert.ok(matches({ host: pattern }, { path: '/', host }), `${pattern} ${host}`);
    }
  }
  assert.ok(!matches({ host: '[::1]' }, { path: '/', host: '[::2]:8080' }));
});

test('router: *.example.com matches exactly one leading label', () => {
  const m = { host: '*.example.com' };
  assert.ok(matches(m, { path: '/', host: 'a.example.com' }));
  assert.ok(matches(m, { path: '/', host: 'A.Example.com:443' }));
  for (const host of ['example.com', 'a.b.example.com', '.example.com', 'aexample.com']) {
    assert.ok(!matches(m, { path: '/', host }), host);
  }
});

test('router: host and hosts merge into one any-of list', () => {
  const m = { host: 'a.test', hosts: ['b.test', '*.c.test'] };
  for (const host of ['a.test', 'b.test', 'x.c.test']) assert.ok(matches(m, { path: '/', host }), host);
  assert.ok(!matches(m, { path: '/', host: 'd.test' }));
  assert.ok(matches({ hosts: [] }, { path: '/', host: 'anything' }));
});

test('router: a route with a host criterion does not match a request without a host', () => {
  assert.ok(!matches({ host: 'a.test' }, { path: '/' }));
  assert.ok(matches({}, { path: '/' }));
});

test('router: all present criteria are ANDed', () => {
  const m = { path: '/api/*', methods: ['POST'], host: 'api.test', headers: { 'x-v': '2' } };
  const ok: Request = { path: '/api/x', method: 'POST', host: 'api.test', headers: { 'x-v': '2' } };
  assert.ok(matches(m, ok));
  assert.ok(!matches(m, { ...ok, path: '/web' }));
  assert.ok(!matches(m, { ...ok, method: 'GET' }));
  assert.ok(!matches(m, { ...ok, host: 'web.test' }));
  assert.ok(!matches(m, { ...ok, headers: {} }));
});

test('router: the first declared match wins across mixed pattern kinds', () => {
  const routes = table(
    ['prefix', { path: '/api/*' }],
    ['wildcard', { path: '/api/*/items' }],
    ['exact', { path: '/api/v1/items' }],
    ['any', {}],
  );
  assert.equal(route(routes, { path: '/api/v1/items' }), 'prefix');
  assert.equal(route(routes.slice(1), { path: '/api/v1/items' }), 'wildcard');
  assert.equal(route(routes.slice(2), { path: '/api/v1/items' }), 'exact');
  assert.equal(route([...routes.slice(1), ...routes.slice(0, 1)], { path: '/api/v2' }), 'any');
  const hosted = table(['vhost', { path: '/*', host: '*.test' }], ['exact', { path: '/a', host: 'a.test' }]);
  assert.equal(route(hosted, { path: '/a', host: 'a.test' }), 'vhost');
});

test('router: a later route wins when an earlier one fails on method, host or headers', () => {
  const routes = table(
    ['post-only', { path: '/a', methods: ['POST'] }],
    ['other-host', { path: '/a', host: 'b.test' }],
    ['needs-header', { path: '/a', headers: { 'x-a': '1' } }],
    ['fallback', { path: '/*' }],
  );
  assert.equal(route(routes, { path: '/a', host: 'a.test' }), 'fallback');
  assert.equal(route(routes, { path: '/a', host: 'a.test', headers: { 'x-a': '1' } }), 'needs-header');
  assert.equal(route(routes, { path: '/a', host: 'b.test', headers: { 'x-a': '1' } }), 'other-host');
  assert.equal(route(routes, { path: '/a', method: 'POST', host: 'b.test' }), 'post-only');
});

test('router: no match returns undefined and size counts the routes', () => {
  const router = compileRouter(table(['a', { path: '/a' }], ['b', { path: '/b', methods: ['GET'] }]));
  assert.equal(router.size, 2);
  assert.equal(router.match('GET', undefined, '/c', {}), undefined);
  assert.equal(router.match('POST', undefined, '/b', {}), undefined);
  assert.equal(compileRouter([]).match('GET', 'a.test', '/', {}), undefined);
});

test('router: the matched entry is the declared entry object', () => {
  const routes = table(['a', { path: '/a' }]);
  assert.equal(compileRouter(routes).match('GET', undefined, '/a', {}), routes[0]);
});

function issuesFor(match: ResolvedMatch): string[] {
  return validateRouteMatch(match, 'routes[3].match').map((i) => `${i.path}: ${i.message}`);
}

test('validateRouteMatch: accepts every documented pattern kind', () => {
  const ok: ResolvedMatch = {
    path: '/users/*/orders/*',
    methods: ['get', 'POST', 'M-SEARCH'],
    headers: { 'X-A': '1' },
    host: '*.example.com',
    hosts: ['Example.com:8080', '[::1]', 'localhost'],
  };
  assert.deepEqual(issuesFor(ok), []);
  for (const path of ['/', '/*', '/a//b', '/a/b/']) assert.deepEqual(issuesFor({ path }), [], path);
});

test('validateRouteMatch: a path must start with /', () => {
  const issues = issuesFor({ path: 'api/*' });
  assert.equal(issues.length, 1);
  assert.match(issues[0] ?? '', /^routes\[3\]\.match\.path: /);
  assert.equal(issuesFor({ path: '' }).length, 1);
});

test('validateRouteMatch: * must be a whole path segment', () => {
  for (const path of ['/a*b', '/a*', '/*a/b', '/api/v1*']) {
    const issues = issuesFor({ path });
    assert.equal(issues.length, 1, path);
    assert.match(issues[0] ?? '', /^routes\[3\]\.match\.path: /);
  }
});

test('validateRouteMatch: ** is rejected', () => {
  for (const path of ['/**', '/a/**/b']) {
    const issues = issuesFor({ path });
    assert.equal(issues.length, 1, path);
    assert.match(issues[0] ?? '', /^routes\[3\]\.match\.path: .*\*\*/);
  }
});

test('validateRouteMatch: an empty host is rejected', () => {
  assert.match(issuesFor({ host: '' })[0] ?? '', /^routes\[3\]\.match\.host: /);
  assert.match(issuesFor({ hosts: ['a.test', ''] })[0] ?? '', /^routes\[3\]\.match\.hosts\[1\]: /);
  assert.equal(issuesFor({ host: ':8080' }).length, 1);
});

test('validateRouteMatch: a host wildcard must be a single leading *. label', () => {
  for (const host of [
    '*',
    '*.',
    '*example.com',
    'a.*.example.com',
    '*.*.example.com',
    '**.example.com',
    '*..com',
  ]) {
    const issues = issuesFor({ hosts: [host] });
    assert.equal(issues.length, 1, host);
    assert.match(issues[0] ?? '', /^routes\[3\]\.match\.hosts\[0\]: /);
  }
});

test('validateRouteMatch: methods must be tokens', () => {
  const issues = issuesFor({ methods: ['GET', '', 'GE T', 'GET,POST', 'PÖST'] });
  assert.deepEqual(
    issues.map((i) => i.split(':')[0]),
    [
      'routes[3].match.methods[1]',
      'routes[3].match.methods[2]',
      'routes[3].match.methods[3]',
      'routes[3].match.methods[4]',
    ],
  );
});

test('compileRouter: an invalid pattern throws ConfigRejected naming the route', () => {
  assert.throws(
    () => compileRouter(table(['ok', { path: '/a' }], ['bad', { path: '/a*b' }])),
    (err: unknown) => err instanceof ConfigRejected && err.issues[0]?.path === 'routes[1].match.path',
  );
});

// ---- Property test: the compiled router against a direct reading of COMPAT §3.1. ----

function referenceHost(host: string): string {
  let h = host.toLowerCase();
  const bracketed = /^\[([^\]]*)\]/.exec(h);
  if (bracketed !== null) h = bracketed[1] ?? '';
  else if (h.split(':').length === 2) h = h.split(':')[0] ?? '';
  return h;
}

function referenceMatches(
  m: ResolvedMatch,
  req: Required<Omit<Request, 'host'>> & { host?: string },
): boolean {
  if (m.path !== undefined) {
    const pattern = m.path.split('/').slice(1);
    const prefix = pattern[pattern.length - 1] === '*';
    if (prefix) pattern.pop();
    if (!req.path.startsWith('/')) {
      if (!(prefix && pattern.length === 0)) return false;
    } else {
      const segs = req.path.split('/').slice(1);
      if (prefix ? segs.length < pattern.length : segs.length !== pattern.length) return false;
      if (!pattern.every((p, i) => p === '*' || p === segs[i])) return false;
    }
  }
  const methods = m.methods ?? [];
  if (methods.length > 0 && !methods.some((x) => x.toUpperCase() === req.method.toUpperCase())) return false;
  const hosts = [...(m.host === undefined ? [] : [m.host]), ...(m.hosts ?? [])];
  if (hosts.length > 0) {
    if (req.host === undefined) return false;
    const h = referenceHost(req.host);
    const ok = hosts.some((raw) => {
      const p = referenceHost(raw);
      if (!p.startsWith('*.')) return p === h;
      const labels = h.split('.');
      return labels.length > 1 && labels[0] !== '' && labels.slice(1).join('.') === p.slice(2);
    });
    if (!ok) return false;
  }
  for (const [name, value] of Object.entries(m.headers ?? {})) {
    const got = req.headers[name.toLowerCase()];
    if ((Array.isArray(got) ? got[0] : got) !== value) return false;
  }
  return true;
}

/** xorshift32: small, deterministic, good enough to spread test cases. */
function rng(seed: number): {
  int(n: number): number;
  pick<X>(xs: readonly X[]): X;
  chance(p: number): boolean;
} {
  let s = seed >>> 0 || 1;
  const next = (): number => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x1_0000_0000;
  };
  return {
    int: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)] as (typeof xs)[number],
    chance: (p) => next() < p,
  };
}

test('router: compiled router agrees with a reference matcher on random tables (seed 0x5eed)', () => {
  const r = rng(0x5eed);
  const SEGMENTS = ['a', 'b', 'api', 'v1', ''];
  const PATTERN_HOSTS = [
    'a.example.com',
    '*.example.com',
    'Example.com:8080',
    '*.b.example.com',
    '[::1]',
    '::1',
  ];
  const REQUEST_HOSTS = [
    'a.example.com',
    'A.EXAMPLE.com:443',
    'example.com',
    'x.b.example.com',
    'a.b.example.com',
  ];
  const MORE_HOSTS = ['[::1]:8080', '::1', '.example.com', 'localhost:3000'];
  const HEADER_VALUES: HeaderMap[string][] = ['1', '2', ['2', '1'], ['1'], undefined];
  const randomPath = (maxSegments: number): string =>
    Array.from({ length: r.int(maxSegments + 1) }, () => '/' + r.pick(SEGMENTS)).join('') || '/';
  let compared = 0;
  let hits = 0;
  let deep = 0;
  for (let t = 0; t < 40; t++) {
    const routes: RouteEntry<number>[] = [];
    const size = 1 + r.int(150);
    for (let i = 0; i < size; i++) {
      const match: ResolvedMatch = {};
      if (!r.chance(0.03)) {
        const segs = Array.from({ length: 1 + r.int(4) }, () => (r.chance(0.15) ? '*' : r.pick(SEGMENTS)));
        match.path = segs.map((s) => '/' + s).join('') + (r.chance(0.2) ? '/*' : '') || '/';
      }
      if (r.chance(0.4))
        match.methods = Array.from({ length: r.int(3) }, () => r.pick(['get', 'GET', 'Post', 'PUT']));
      if (r.chance(0.3)) match.host = r.pick(PATTERN_HOSTS);
      if (r.chance(0.3)) match.hosts = Array.from({ length: r.int(3) }, () => r.pick(PATTERN_HOSTS));
      if (r.chance(0.25))
        match.headers = r.chance(0.5) ? { 'X-A': r.pick(['1', '2']) } : { 'x-a': '1', 'x-b': '2' };
      routes.push({ name: `r${i}`, match, target: i });
    }
    const router = compileRouter(routes);
    for (let q = 0; q < 250; q++) {
      const req = {
        method: r.pick(['GET', 'get', 'POST', 'PUT', 'DELETE']),
        path: r.chance(0.03) ? r.pick(['*', '', 'a/b']) : randomPath(5),
        headers: { 'x-a': r.pick(HEADER_VALUES), 'x-b': r.pick(HEADER_VALUES) },
        ...(r.chance(0.1) ? {} : { host: r.pick(r.chance(0.8) ? REQUEST_HOSTS : MORE_HOSTS) }),
      };
      const expected = routes.findIndex((route) => referenceMatches(route.match, req));
      const got = router.match(req.method, req.host, req.path, req.headers)?.target ?? -1;
      assert.equal(got, expected, JSON.stringify({ table: t, req, route: routes[expected]?.match ?? null }));
      compared++;
      if (expected !== -1) hits++;
      if (expected > 20) deep++;
    }
  }
  assert.equal(compared, 10_000);
  // Guard against a generator whose first route always wins or that never matches.
  assert.ok(hits > 2_000 && hits < 9_500, `hits=${hits}`);
  assert.ok(deep > 1_000, `matches past index 20: ${deep}`);
});

test('router: host matching holds across more distinct Host values than the normalization cache keeps', () => {
  const router = compileRouter(table(['a', { host: 'a.test' }], ['wild', { host: '*.b.test' }]));
  for (let i = 0; i < 3_000; i++) {
    assert.equal(router.match('GET', `h${i}.b.test:${i}`, '/', {})?.name, 'wild');
    assert.equal(router.match('GET', `A.TEST:${i}`, '/', {})?.name, 'a');
    assert.equal(router.match('GET', `h${i}.c.test`, '/', {}), undefined);
  }
});

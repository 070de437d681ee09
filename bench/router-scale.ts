/**
 * Route lookup cost as the table grows from 10 to 10,000 routes: a hit on
 * the last declared route (the worst case for first-match-wins), a miss on an
 * unknown path, and a near miss (the last route's request with a method it
 * does not allow). The linear column scans one single-route router per
 * route, standing in for a naive declaration-order scan with the same
 * semantics. Compile times of the first rows include JIT warm-up.
 * Run: node --import tsx bench/router-scale.ts
 */
import type { HeaderMap } from '../src/core/context.js';
import type { ResolvedMatch, RouteEntry, Router } from '../src/engine/router.js';
import { compileRouter } from '../src/engine/router.js';

interface Lookup {
  method: string;
  host: string;
  path: string;
  headers: HeaderMap;
}

const PLAIN_HOST = 'gateway.bench:8080';

/** Route `i` of a mixed table plus a request that only it matches; kind 0 carries every criterion. */
function routeAndRequest(i: number, kind: number): { match: ResolvedMatch; hit: Lookup } {
  const hit: Lookup = { method: 'GET', host: PLAIN_HOST, path: '', headers: {} };
  switch (kind) {
    case 0:
      return {
        match: {
          path: `/svc${i}/items`,
          methods: ['PUT'],
          host: 'gateway.bench',
          headers: { 'X-Tenant': `t${i}` },
        },
        hit: { ...hit, method: 'PUT', path: `/svc${i}/items`, headers: { 'x-tenant': `t${i}` } },
      };
    case 1:
      return { match: { path: `/api/v${i}/*` }, hit: { ...hit, path: `/api/v${i}/users/42` } };
    case 2:
      return {
        match: { path: `/users/${i}/*/orders`, methods: ['get', 'post'] },
        hit: { ...hit, method: 'POST', path: `/users/${i}/42/orders` },
      };
    case 3: // a virtual host owning its whole path space
      return {
        match: { path: '/*', host: `t${i}.example.com` },
        hit: { ...hit, host: `T${i}.example.com:443` },
      };
    case 4:
      return {
        match: { path: `/static/${i}/*`, hosts: [`*.cdn${i}.example.com`, `cdn${i}.example.com`] },
        hit: { ...hit, host: `eu.cdn${i}.example.com`, path: `/static/${i}/app.js` },
      };
    default:
      return { match: { path: `/svc${i}/items`, methods: ['GET'] }, hit: { ...hit, path: `/svc${i}/items` } };
  }
}

function nsPerLookup(
  router: Router<number>,
  q: Lookup,
  expected: number | undefined,
  iterations: number,
): number {
  const run = (): number => {
    let sum = 0;
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++)
      sum += router.match(q.method, q.host, q.path, q.headers)?.target ?? -1;
    const elapsed = Number(process.hrtime.bigint() - start);
    // Checking the result keeps the loop from being optimised away.
    if (sum !== iterations * (expected ?? -1))
      throw new Error(`lookup of ${q.path} returned the wrong route`);
    return elapsed / iterations;
  };
  run(); // warm-up: let the JIT settle
  const samples = [run(), run(), run()].sort((a, b) => a - b);
  return samples[1] ?? Number.NaN;
}

/** Declaration-order scan over single-route routers: the linear baseline. */
function linearRouter(routes: RouteEntry<number>[]): Router<number> {
  const singles = routes.map((r) => compileRouter([r]));
  return {
    size: routes.length,
    match: (method, host, path, headers) => {
      for (const single of singles) {
        const found = single.match(method, host, path, headers);
        if (found !== undefined) return found;
      }
      return undefined;
    },
  };
}

const rows = [];
for (const size of [10, 100, 1_000, 10_000]) {
  // Kinds rotate so that the last declared route is always kind 0.
  const built = Array.from({ length: size }, (_, i) => routeAndRequest(i, (size - 1 - i) % 6));
  const routes = built.map(({ match }, i): RouteEntry<number> => ({ name: `r${i}`, match, target: i }));
  const compileStart = process.hrtime.bigint();
  const router = compileRouter(routes);
  const compileMs = Number(process.hrtime.bigint() - compileStart) / 1e6;
  const last = built[size - 1]?.hit;
  if (last === undefined) throw new Error('empty table');
  const miss: Lookup = { method: 'GET', host: PLAIN_HOST, path: '/nothing/here/at/all', headers: {} };
  const nearMiss: Lookup = { ...last, method: 'DELETE' };
  const linearIterations = Math.max(200, Math.floor(2_000_000 / size));
  rows.push({
    routes: size,
    'compile ms': compileMs.toFixed(2),
    'hit last ns': nsPerLookup(router, last, size - 1, 1_000_000).toFixed(0),
    'miss ns': nsPerLookup(router, miss, undefined, 1_000_000).toFixed(0),
    'near miss ns': nsPerLookup(router, nearMiss, undefined, 1_000_000).toFixed(0),
    'linear hit last ns': nsPerLookup(linearRouter(routes), last, size - 1, linearIterations).toFixed(0),
  });
}
console.log('router lookup cost by table size (median of 3 runs; ns per lookup)');
console.table(rows);

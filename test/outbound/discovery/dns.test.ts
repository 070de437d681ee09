/**
 * Service discovery from DNS (docs/service-discovery.md#dns) against a real dnsmasq whose records the
 * tests change: A records followed within the TTL, SRV priorities and weights (RFC 2782), the
 * last good answer kept while the resolver is dead, none of it a config reload.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { dnsmasqSkip, startDnsmasq, type Dnsmasq, type DnsRecords } from '../../support/dnsmasq.js';
import {
  metricSum,
  startNamedOrigin,
  startOriginPair,
  tally,
  upstreamPolicy,
  whoAnswers,
  type NamedOrigin,
} from '../../support/discovery.js';
import { waitFor } from '../../support/wait.js';

const skip = dnsmasqSkip();

let dns: Dnsmasq;
let gw: RunningGateway;
let blue: NamedOrigin;
let green: NamedOrigin;
const srv: Record<'a' | 'b' | 'c' | 'd', NamedOrigin> = {} as never;
let records: DnsRecords;

/** Generous: the TTL is 1 s, a look-up runs every second. */
const FOLLOW_MS = 15000;

before(async () => {
  if (skip !== false) return;
  [blue, green] = await startOriginPair(['blue', 'green'], ['127.0.0.2', '127.0.0.3']);
  for (const name of ['a', 'b', 'c', 'd'] as const) srv[name] = await startNamedOrigin(name);
  records = {
    hosts: {
      'web.test': ['127.0.0.2'],
      'a.test': ['127.0.0.1'],
      'b.test': ['127.0.0.1'],
      'c.test': ['127.0.0.1'],
      'd.test': ['127.0.0.1'],
    },
    srv: [
      { name: '_http._tcp.svc.test', target: 'a.test', port: srv.a.port, priority: 10, weight: 3 },
      { name: '_http._tcp.svc.test', target: 'b.test', port: srv.b.port, priority: 10, weight: 1 },
      { name: '_http._tcp.svc.test', target: 'c.test', port: srv.c.port, priority: 20, weight: 1 },
    ],
  };
  dns = await startDnsmasq(records);
  const resolvers = `resolvers: ["${dns.server}"]`;
  gw = await startGateway(
    [
      'routes:',
      '  - { name: hosts, match: { path: /hosts }, policy: hosts }',
      '  - { name: srv, match: { path: /srv }, policy: srv }',
      'policies:',
      upstreamPolicy(
        'hosts',
        `{ discovery: { type: dns, host: web.test, port: ${blue.port}, ${resolvers} } }`,
      ),
      upstreamPolicy(
        'srv',
        `{ discovery: { type: dns, srv: _http._tcp.svc.test, ${resolvers} }, health_check: { passive: { max_fails: 1, fail_timeout_seconds: 60 } } }`,
      ),
      '',
    ].join('\n'),
  );
});

after(async () => {
  if (skip !== false) return;
  await gw?.stop();
  await dns?.stop();
  for (const origin of [blue, green, ...Object.values(srv)]) await origin?.close();
});

const targets = (policy: string, source: string) =>
  metricSum(gw, 'gateway_discovery_targets', { policy, node_id: 'up', source });

test(
  'discovery dns: A records are resolved in the background and followed within the TTL',
  { skip },
  async () => {
    await waitFor(async () => (await whoAnswers(`${gw.url}/hosts`)) === 'blue', {
      timeoutMs: FOLLOW_MS,
      what: 'the first answer (web.test → 127.0.0.2)',
    });
    assert.equal(await targets('hosts', 'dns:web.test'), 1);

    records = { ...records, hosts: { ...records.hosts, 'web.test': ['127.0.0.2', '127.0.0.3'] } };
    await dns.set(records);
    await waitFor(async () => (await targets('hosts', 'dns:web.test')) === 2, {
      timeoutMs: FOLLOW_MS,
      what: 'the second address to be picked up',
    });
    const both = await tally(`${gw.url}/hosts`, 20);
    assert.deepEqual([...both.keys()].sort(), ['blue', 'green'], `answers: ${JSON.stringify([...both])}`);

    records = { ...records, hosts: { ...records.hosts, 'web.test': ['127.0.0.3'] } };
    await dns.set(records);
    const changedAt = Date.now();
    await waitFor(async () => (await targets('hosts', 'dns:web.test')) === 1, {
      timeoutMs: FOLLOW_MS,
      what: 'the removed address to leave',
    });
    // TTL 1 s: generously within a few TTLs, never a restart or a reload.
    assert.ok(Date.now() - changedAt < 10000, `followed after ${Date.now() - changedAt} ms`);
    const after = await tally(`${gw.url}/hosts`, 20);
    assert.deepEqual([...after], [['green', 20]]);
  },
);

test(
  'discovery dns: SRV weights shape the distribution within the lowest priority group',
  { skip },
  async () => {
    await waitFor(async () => (await targets('srv', 'dns:_http._tcp.svc.test')) === 3, {
      timeoutMs: FOLLOW_MS,
      what: 'the three SRV records',
    });
    const counts = await tally(`${gw.url}/srv`, 400);
    const a = counts.get('a') ?? 0;
    const b = counts.get('b') ?? 0;
    // 3:1 between a and b (priority 10); c (priority 20) unused while a or b is up.
    assert.equal(counts.get('c'), undefined, `answers: ${JSON.stringify([...counts])}`);
    assert.equal(a + b, 400, `answers: ${JSON.stringify([...counts])}`);
    assert.ok(a >= 260 && a <= 340 && b >= 60 && b <= 140, `a=${a} b=${b}`);
  },
);

test(
  'discovery dns: the next priority group takes over when the lowest one is down, and SRV changes are followed',
  { skip },
  async () => {
    await srv.a.close();
    await srv.b.close();
    // A keep-alive connection that died with its origin may fail one request; then c answers.
    await waitFor(async () => (await whoAnswers(`${gw.url}/srv`)) === 'c', {
      timeoutMs: FOLLOW_MS,
      what: 'priority 20 to take over',
    });
    const down = await tally(`${gw.url}/srv`, 20);
    assert.deepEqual([...down], [['c', 20]]);

    // A new record in the preferred group: traffic goes back there.
    records = {
      ...records,
      srv: [
        ...records.srv,
        { name: '_http._tcp.svc.test', target: 'd.test', port: srv.d.port, priority: 10, weight: 1 },
      ],
    };
    await dns.set(records);
    await waitFor(async () => (await whoAnswers(`${gw.url}/srv`)) === 'd', {
      timeoutMs: FOLLOW_MS,
      what: 'the new priority-10 record to take the traffic',
    });
    const back = await tally(`${gw.url}/srv`, 20);
    assert.deepEqual([...back], [['d', 20]]);
    assert.equal(await targets('srv', 'dns:_http._tcp.svc.test'), 4);
  },
);

test(
  'discovery dns: a dead resolver keeps the last answer and counts errors; recovery follows again',
  { skip },
  async () => {
    const errorsBefore = await metricSum(gw, 'gateway_discovery_errors_total', { source: 'dns:web.test' });
    await dns.kill();
    await waitFor(
      async () =>
        (await metricSum(gw, 'gateway_discovery_errors_total', { source: 'dns:web.test' })) > errorsBefore,
      { timeoutMs: FOLLOW_MS, what: 'a failed look-up to be counted' },
    );
    assert.deepEqual([...(await tally(`${gw.url}/hosts`, 20))], [['green', 20]]);
    assert.deepEqual([...(await tally(`${gw.url}/srv`, 10))], [['d', 10]]);
    assert.equal(await targets('hosts', 'dns:web.test'), 1);

    records = { ...records, hosts: { ...records.hosts, 'web.test': ['127.0.0.2'] } };
    await dns.set(records);
    await waitFor(async () => (await whoAnswers(`${gw.url}/hosts`)) === 'blue', {
      timeoutMs: FOLLOW_MS,
      what: 'the answer of the restarted resolver',
    });
  },
);

test('discovery dns: no change above was a configuration reload', { skip }, async () => {
  assert.equal(await metricSum(gw, 'gateway_config_reloads_total'), 0);
  assert.equal(await metricSum(gw, 'gateway_config_applies_total', { source: 'startup' }), 1);
});

/**
 * Health state survives a reload (operator review F1, F27; docs/plugins/upstream.md#health-checks):
 * a real gateway process and real origins whose health endpoint the test turns down and up.
 *
 * - F1: a policy whose upstream has `health_check.active.path` was compiled again on every reload
 *   (`path` was taken for a file), and its fresh checker put a down target back into rotation.
 * - A changed policy whose upstream keeps its targets and checks keeps their health state.
 * - F27: upstream nodes probing the same target the same way (two `config_ref`s and an inline copy)
 *   share one checker, which stops when the last of them is removed.
 *
 * Probe spacing is the origin-side witness: one checker probes a target at most once per
 * `interval_ms` (the next probe starts `interval_ms` after the previous answer), so a gap much
 * shorter than the interval means a second checker or a restarted one.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../support/free-port.js';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../../support/etcd.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../../support/gateway-process.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { tempDir } from '../../support/temp-dir.js';
import { waitFor } from '../../support/wait.js';

const INTERVAL = 150;
const ACTIVE = {
  path: '/healthz',
  interval_ms: INTERVAL,
  timeout_ms: 1000,
  unhealthy_threshold: 3,
  healthy_threshold: 3,
};

/** An origin that answers `/healthz` with 200 or 503 (`healthy`) and logs when each probe came. */
interface Probed {
  origin: Origin;
  address: string;
  healthy: boolean;
  /** performance.now() of each probe's arrival. */
  probes: number[];
}

async function probedOrigin(name: string): Promise<Probed> {
  const state = { healthy: true, probes: [] as number[] } as Probed;
  state.origin = await startOrigin(
    (req, res, body) => {
      if (req.url === '/healthz') {
        state.probes.push(performance.now());
        res.writeHead(state.healthy ? 200 : 503);
        res.end();
      } else echo(name)(req, res, body);
    },
    { name },
  );
  state.address = `127.0.0.1:${state.origin.port}`;
  return state;
}

/** The shortest gap between consecutive probes at or after index `from` (Infinity with fewer than two). */
function shortestGap(probes: readonly number[], from = 0): number {
  let shortest = Infinity;
  for (let i = Math.max(from, 1); i < probes.length; i++)
    shortest = Math.min(shortest, probes[i]! - probes[i - 1]!);
  return shortest;
}

type Json = Record<string, unknown>;

/**
 * Whether process `pid` handles SIGHUP yet (Linux: bit 0 of SigCgt). The gateway installs its
 * handler after the admin listener answers, and an unhandled SIGHUP ends the process.
 */
function catchesSighup(pid: number): boolean {
  const mask = /SigCgt:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return mask !== undefined && (BigInt(`0x${mask}`) & 1n) === 1n;
}

function upstreamPolicy(name: string, upstream: Json): Json {
  return {
    name,
    nodes: [
      { id: 'l', type: 'listener' },
      { id: 'up', type: 'upstream', ...upstream },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'l.out', to: 'up.in' },
      { from: 'up.success', to: 'out.in' },
    ],
  };
}

const route = (name: string, path: string, policy: string): Json => ({ name, match: { path }, policy });

const AUTH = `Basic ${Buffer.from('admin:correct horse').toString('base64')}`;

/** A spawned gateway and what the tests ask of it. */
class Running {
  constructor(
    readonly gw: GatewayProcess,
    readonly data: string,
    readonly admin: string,
  ) {}

  adminCall(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(this.admin + path, {
      method,
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  /** The JSON log lines with message `msg` so far. */
  logged(msg: string): Json[] {
    return this.gw
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes(msg))
      .map((l) => JSON.parse(l) as Json)
      .filter((l) => l.msg === msg);
  }

  /** Runs `change`, then waits for the next `configuration applied` line and returns it. */
  async reload(change: () => unknown): Promise<Json> {
    const before = this.logged('configuration applied').length;
    await change();
    await waitFor(() => this.logged('configuration applied').length > before, {
      timeoutMs: 20_000,
      what: 'the configuration to be applied',
    }).catch((err: Error) => {
      throw new Error(`${err.message}; the gateway said:\n${this.gw.output().slice(-2000)}`);
    });
    return this.logged('configuration applied')[before]!;
  }

  async targetUp(policy: string, target: string): Promise<number> {
    const text = await (await this.adminCall('GET', '/metrics')).text();
    const series = `gateway_upstream_target_up{policy="${policy}",node_id="up",target="${target}"} `;
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? NaN : Number(line.slice(series.length));
  }

  /** Which origin answered each of `count` requests to `path`. */
  async answers(path: string, count: number): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await fetch(this.data + path);
      await res.arrayBuffer();
      assert.equal(res.status, 200, `${path} answered ${res.status}`);
      out.push(res.headers.get('x-origin') ?? '?');
    }
    return out;
  }

  markedDown(policy: string, target: string): number {
    return this.logged('upstream target marked down').filter(
      (l) => l.policy === policy && l.target === target,
    ).length;
  }
}

/** Starts a gateway on `gateway.yaml` (JSON is YAML) in `dir`; `system` adds system.yaml lines. */
async function startGateway(dir: string, config: Json, system: string[] = []): Promise<Running> {
  const [dataPort, adminPort] = [await freePort(), await freePort()];
  const systemPath = join(dir, 'system.yaml');
  const gatewayPath = join(dir, 'gateway.yaml');
  writeFileSync(
    systemPath,
    [
      `listener: { bind: 127.0.0.1, port: ${dataPort} }`,
      'logging: { level: info }',
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: "correct horse" }`,
      ...system,
      '',
    ].join('\n'),
  );
  writeFileSync(gatewayPath, JSON.stringify(config, null, 2));
  const gw = spawnGateway(['--system-config', systemPath, '--gateway-config', gatewayPath]);
  const admin = `http://127.0.0.1:${adminPort}`;
  const exited = gw.exited.then((code) => {
    throw new Error(`the gateway exited with code ${String(code)}\n${gw.output()}`);
  });
  await Promise.race([waitForHttp(`${admin}/healthz`, 60_000), exited]);
  return new Running(gw, `http://127.0.0.1:${dataPort}`, admin);
}

describe('upstream health across reloads (real gateway)', () => {
  const dir = tempDir('switchyard-reload-health-');
  const gatewayPath = join(dir.path, 'gateway.yaml');
  let run: Running;
  let a: Probed; // always healthy
  let b: Probed; // p1's second target, turned down and up
  let c: Probed; // probed by sa, sb (config_ref) and sc (inline copy)
  let d: Probed; // the witness: probed by w throughout
  let dead = 0;
  let p1: Json;
  let pp: Json;
  let config: Json;

  before(async () => {
    [a, b, c, d] = await Promise.all([
      probedOrigin('a'),
      probedOrigin('b'),
      probedOrigin('c'),
      probedOrigin('d'),
    ]);
    dead = await deadPort();
    const probedC = { targets: [c.origin.target], health_check: { active: ACTIVE } };
    p1 = upstreamPolicy('p1', {
      config: {
        targets: [a.origin.target, b.origin.target],
        timeout_ms: 5000,
        health_check: { active: ACTIVE },
      },
    });
    pp = upstreamPolicy('pp', {
      config: {
        targets: [a.origin.target, { host: '127.0.0.1', port: dead }],
        timeout_ms: 5000,
        health_check: { passive: { max_fails: 1, fail_timeout_seconds: 600 } },
      },
    });
    config = {
      plugin_configs: [{ name: 'probed-c', type: 'upstream', config: probedC }],
      routes: [
        route('r-p1', '/p1', 'p1'),
        route('r-pp', '/pp', 'pp'),
        route('r-sa', '/sa', 'sa'),
        route('r-sb', '/sb', 'sb'),
        route('r-sc', '/sc', 'sc'),
        route('r-w', '/w', 'w'),
        route('r-other', '/other', 'other'),
      ],
      policies: [
        p1,
        pp,
        upstreamPolicy('sa', { config_ref: 'probed-c' }),
        upstreamPolicy('sb', { config_ref: 'probed-c' }),
        upstreamPolicy('sc', { config: probedC }),
        upstreamPolicy('w', { config: { targets: [d.origin.target], health_check: { active: ACTIVE } } }),
        {
          name: 'other',
          nodes: [
            { id: 'l', type: 'listener' },
            { id: 'm', type: 'mocking', config: { response_example: 'other' } },
            { id: 'out', type: 'client' },
          ],
          edges: [
            { from: 'l.out', to: 'm.in' },
            { from: 'm.success', to: 'out.in' },
          ],
        },
      ],
    };
    b.healthy = false;
    // Only SIGHUP and Admin writes reload: the test decides when.
    run = await startGateway(dir.path, config, ['config: { watch: false }']);
  });

  after(async () => {
    await run?.gw.stop();
    await Promise.all([a, b, c, d].map((o) => o?.origin.close()));
    dir.remove();
  });

  test('F1: a reload keeps a down target down (SIGHUP, and an Admin API write of an unrelated route)', async () => {
    await waitFor(async () => (await run.targetUp('p1', b.address)) === 0, {
      timeoutMs: 20_000,
      what: 'active checks to mark b down',
    });
    assert.equal(run.markedDown('p1', b.address), 1);
    const probesBefore = b.probes.length;

    // SIGHUP after an unrelated edit of the file: a route added to another policy.
    (config.routes as Json[]).push(route('r-extra', '/extra', 'other'));
    writeFileSync(gatewayPath, JSON.stringify(config, null, 2));
    await waitFor(() => catchesSighup(run.gw.child.pid!), { what: 'the SIGHUP handler' });
    const bySignal = await run.reload(() => run.gw.child.kill('SIGHUP'));
    assert.equal(bySignal.source, 'signal');
    assert.equal(bySignal.compiled, 0, 'no policy was compiled again');
    assert.equal(await run.targetUp('p1', b.address), 0, 'b is still down right after the reload');
    assert.deepEqual(new Set(await run.answers('/p1', 12)), new Set(['a']));

    // An Admin API write of an unrelated route.
    const byAdmin = await run.reload(async () => {
      const res = await run.adminCall('POST', '/api/routes', route('r-extra2', '/extra2', 'other'));
      assert.equal(res.status, 201, await res.text());
    });
    assert.equal(byAdmin.source, 'admin');
    assert.equal(byAdmin.compiled, 0);
    assert.equal(await run.targetUp('p1', b.address), 0);
    assert.deepEqual(new Set(await run.answers('/p1', 12)), new Set(['a']));

    // The checker went on as one: no burst of probes at b, and b was marked down once.
    await waitFor(() => b.probes.length >= probesBefore + 4, { what: 'more probes of b' });
    const gap = shortestGap(b.probes);
    assert.ok(gap >= INTERVAL * 0.9, `two probes of b ${gap.toFixed(0)} ms apart: the checker restarted`);
    assert.equal(run.markedDown('p1', b.address), 1, 'b was not marked down a second time');
  });

  test('F1: a changed policy with unchanged upstream keeps health state (active and passive)', async () => {
    // pp's dead target is ejected by passive checks (one refused connection; retried on a).
    await waitFor(
      async () => {
        await run.answers('/pp', 1);
        return (await run.targetUp('pp', `127.0.0.1:${dead}`)) === 0;
      },
      { what: 'the dead target to be ejected' },
    );
    assert.equal(await run.targetUp('p1', b.address), 0);
    const probesBefore = b.probes.length;

    // Both policies change (timeout_ms); their targets and checks do not.
    const p1Changed = structuredClone(p1);
    const pp1Changed = structuredClone(pp);
    ((p1Changed.nodes as Json[])[1]!.config as Json).timeout_ms = 6000;
    ((pp1Changed.nodes as Json[])[1]!.config as Json).timeout_ms = 6000;
    for (const policy of [p1Changed, pp1Changed]) {
      const applied = await run.reload(async () => {
        const res = await run.adminCall('PUT', `/api/policies/${String(policy.name)}`, policy);
        assert.equal(res.status, 200, await res.text());
      });
      assert.equal(applied.compiled, 1, `${String(policy.name)}, changed, was compiled again`);
    }
    const p1Now = (await (await run.adminCall('GET', '/api/policies/p1')).json()) as Json;
    assert.equal(((p1Now.nodes as Json[])[1]!.config as Json).timeout_ms, 6000);

    assert.equal(await run.targetUp('p1', b.address), 0, 'b stays down under the changed policy');
    assert.equal(await run.targetUp('pp', `127.0.0.1:${dead}`), 0, 'the ejected target stays out');
    assert.deepEqual(new Set(await run.answers('/p1', 12)), new Set(['a']));
    assert.deepEqual(new Set(await run.answers('/pp', 6)), new Set(['a']));
    await waitFor(() => b.probes.length >= probesBefore + 4, { what: 'more probes of b' });
    const gap = shortestGap(b.probes, probesBefore);
    assert.ok(gap >= INTERVAL * 0.9, `two probes of b ${gap.toFixed(0)} ms apart: the checker restarted`);

    // The changed policy follows the kept check: b comes back when it recovers.
    b.healthy = true;
    await waitFor(async () => (await run.targetUp('p1', b.address)) === 1, {
      timeoutMs: 20_000,
      what: 'b back in rotation',
    });
    assert.ok((await run.answers('/p1', 8)).includes('b'));
  });

  test('F27: two policies probing the same target share one checker', async () => {
    assert.deepEqual(await run.answers('/sa', 1), ['c']);
    assert.deepEqual(await run.answers('/sb', 1), ['c']);
    assert.deepEqual(await run.answers('/sc', 1), ['c']);
    const from = c.probes.length;
    await waitFor(() => c.probes.length >= from + 8, { what: 'eight probes of c' });
    const span = c.probes.at(-1)! - c.probes[from]!;
    const gap = shortestGap(c.probes, from + 1);
    // Three upstream nodes (two config_refs, one inline copy) probe c: one checker, one probe per interval.
    assert.ok(gap >= INTERVAL * 0.9, `probes of c ${gap.toFixed(0)} ms apart: more than one checker`);
    assert.ok(span >= 7 * INTERVAL * 0.9, `8 probes of c within ${span.toFixed(0)} ms`);
  });

  test('F27: the shared checker stops when the last policy using it is removed', async () => {
    const remove = async (name: string) => {
      for (const path of [`/api/routes/r-${name}`, `/api/policies/${name}`]) {
        const res = await run.adminCall('DELETE', path);
        assert.equal(res.status, 200, `${path}: ${await res.text()}`);
      }
    };
    await run.reload(() => remove('sa'));
    const from = c.probes.length;
    await waitFor(() => c.probes.length >= from + 3, { what: 'c still probed for sb and sc' });
    assert.ok(shortestGap(c.probes, from) >= INTERVAL * 0.9);

    await remove('sb');
    await run.reload(() => remove('sc'));
    // The last write is applied and the runtime that held sc retired (nothing was in flight).
    const atRemoval = c.probes.length;
    const witness = d.probes.length;
    await waitFor(() => d.probes.length >= witness + 5, { what: 'five more probes of the witness' });
    assert.ok(
      c.probes.length <= atRemoval + 1,
      `c probed ${c.probes.length - atRemoval} times after its last policy was removed`,
    );
    assert.equal((await fetch(`${run.data}/sc`)).status, 404);
  });
});

describe(
  'upstream health across etcd reloads (real gateway, config.source: etcd)',
  {
    skip: skipWithoutEtcd(),
  },
  () => {
    const dir = tempDir('switchyard-reload-health-etcd-');
    const prefix = '/sy-reload-health';
    let etcd: EtcdServer;
    let run: Running;
    let a: Probed;
    let b: Probed;
    let p1: Json;

    before(async () => {
      [a, b] = await Promise.all([probedOrigin('a'), probedOrigin('b')]);
      etcd = await startEtcd();
      p1 = upstreamPolicy('p1', {
        config: {
          targets: [a.origin.target, b.origin.target],
          timeout_ms: 5000,
          health_check: { active: ACTIVE },
        },
      });
      b.healthy = false;
      // The prefix is empty: the gateway seeds it from gateway.yaml, then follows its watch.
      run = await startGateway(dir.path, { routes: [route('r-p1', '/p1', 'p1')], policies: [p1] }, [
        `config: { source: etcd, etcd: { endpoints: ["${etcd.url}"], prefix: ${prefix}, timeout_ms: 5000 } }`,
      ]);
    });

    after(async () => {
      await run?.gw.stop();
      await etcd?.stop();
      await Promise.all([a, b].map((o) => o?.origin.close()));
      dir.remove();
    });

    test('F1: an etcd change (an unrelated route, then the policy itself) keeps a down target down', async () => {
      await waitFor(async () => (await run.targetUp('p1', b.address)) === 0, {
        timeoutMs: 20_000,
        what: 'active checks to mark b down',
      });
      const probesBefore = b.probes.length;

      const unrelated = await run.reload(() =>
        etcd.put(`${prefix}/routes/r-extra`, JSON.stringify(route('r-extra', '/extra', 'p1'))),
      );
      assert.equal(unrelated.source, 'etcd');
      assert.equal(unrelated.compiled, 0, 'no policy was compiled again');
      assert.equal(await run.targetUp('p1', b.address), 0);
      assert.deepEqual(new Set(await run.answers('/p1', 12)), new Set(['a']));

      const changed = structuredClone(p1);
      ((changed.nodes as Json[])[1]!.config as Json).timeout_ms = 6000;
      const own = await run.reload(() => etcd.put(`${prefix}/policies/p1`, JSON.stringify(changed)));
      assert.equal(own.source, 'etcd');
      assert.equal(own.compiled, 1);
      assert.equal(await run.targetUp('p1', b.address), 0, 'b stays down under the changed policy');
      assert.deepEqual(new Set(await run.answers('/p1', 12)), new Set(['a']));

      await waitFor(() => b.probes.length >= probesBefore + 4, { what: 'more probes of b' });
      const gap = shortestGap(b.probes, probesBefore);
      assert.ok(gap >= INTERVAL * 0.9, `two probes of b ${gap.toFixed(0)} ms apart: the checker restarted`);
      assert.equal(run.markedDown('p1', b.address), 1);
    });
  },
);

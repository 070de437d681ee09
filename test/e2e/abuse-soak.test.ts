/**
 * Soak: the data-plane abuse of the security review (H2, M5) against one real
 * gateway process for 12 s — idle sockets, partial h2 prefaces, rapid reset,
 * slow HTTP/1.1 and HTTP/2 bodies — while a control client in its own thread
 * measures GET /hello. The control p99 must stay under 250 ms (or 5× its p99
 * before the abuse, on a machine that slow) and the gateway's RSS growth under
 * 100 MiB; the figures are printed as diagnostics.
 *
 * The volume is modest on purpose (the suite runs on small shared machines):
 * the assertion is about the gateway's limits, not the host.
 */
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { connect as connectH2, constants, type ClientHttp2Session } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  fdCount,
  hangingUpstream,
  PARTIAL_PREFACE,
  rssKiB,
  startAbuseGateway,
} from '../server/abuse-harness.js';
import { waitFor } from '../support/wait.js';

const ABUSE_MS = 12_000;
const BASELINE_MS = 2000;
const IDLE_SOCKETS = 300;
const PARTIAL_PREFACES = 100;
const SLOW_H1_BODIES = 20;
const SLOW_H2_STREAMS = 20;
const RESET_BATCH = 50;
const RESET_EVERY_MS = 100;

/** GET /hello in a loop on a keep-alive connection, in its own event loop; posts the latencies (ms) when told to stop. */
const CONTROL = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = []; let failures = 0; let stop = false;
parentPort.on('message', () => { stop = true; });
// The first workerData.baselineMs of samples are taken before the abuse starts.
const started = Date.now(); const baseline = [];
const once = () => new Promise((resolve) => {
  const t0 = process.hrtime.bigint();
  const req = http.get({ host: '127.0.0.1', port: workerData.port, path: '/hello', agent, timeout: 5000 }, (res) => {
    res.resume();
    res.on('end', () => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (res.statusCode !== 200) failures++;
      else if (Date.now() - started < workerData.baselineMs) baseline.push(ms);
      else latencies.push(ms);
      resolve();
    });
  });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', () => { failures++; resolve(); });
});
(async () => {
  while (!stop) { await once(); await new Promise((r) => setTimeout(r, 10)); }
  agent.destroy();
  parentPort.postMessage({ baseline, latencies, failures });
})();
`;

/** CPU time (user + system) a process has used, in ms (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** Keeps `count` raw sockets open, reopening each one the gateway closes, until `stopped()`. */
function holdSockets(
  port: number,
  count: number,
  first: string | undefined,
  stopped: () => boolean,
): Set<Socket> {
  const open = new Set<Socket>();
  let closedByGateway = 0;
  const one = () => {
    if (stopped()) return;
    const s = connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    s.on('data', () => undefined);
    if (first !== undefined) s.once('connect', () => s.write(first));
    s.once('close', () => {
      open.delete(s);
      closedByGateway++;
      setTimeout(one, 50);
    });
    open.add(s);
  };
  for (let i = 0; i < count; i++) setTimeout(one, i * 2);
  Object.defineProperty(open, 'closedByGateway', { get: () => closedByGateway });
  return open;
}

/** HTTP/1.1 POSTs announcing 1000 bytes and sending one every 500 ms; reopened when the gateway answers 408. */
function slowH1Bodies(
  port: number,
  count: number,
  stopped: () => boolean,
): { answered408: number; sockets: Set<Socket> } {
  const state = { answered408: 0, sockets: new Set<Socket>() };
  const one = () => {
    if (stopped()) return;
    const s = connect(port, '127.0.0.1');
    state.sockets.add(s);
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => {
      if (d.toString('latin1').startsWith('HTTP/1.1 408')) state.answered408++;
    });
    s.once('connect', () =>
      s.write('POST /hello HTTP/1.1\r\nHost: soak.test\r\nContent-Length: 1000\r\n\r\n'),
    );
    const drip = setInterval(() => s.write('x'), 500);
    s.once('close', () => {
      clearInterval(drip);
      state.sockets.delete(s);
      setTimeout(one, 50);
    });
  };
  for (let i = 0; i < count; i++) one();
  return state;
}

/** HTTP/2 streams announcing 1000 bytes and sending one every 500 ms, on one session; reopened when ended. */
function slowH2Streams(
  port: number,
  count: number,
  stopped: () => boolean,
): { answered408: number; session: () => ClientHttp2Session } {
  let session = connectH2(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const state = { answered408: 0, session: () => session };
  const one = () => {
    if (stopped()) return;
    if (session.destroyed || session.closed) {
      session = connectH2(`http://127.0.0.1:${port}`);
      session.on('error', () => undefined);
    }
    const stream = session.request({ ':method': 'POST', ':path': '/hello', 'content-length': '1000' });
    stream.on('error', () => undefined);
    stream.on('response', (h) => {
      if (h[':status'] === 408) state.answered408++;
    });
    stream.resume();
    const drip = setInterval(() => {
      if (!stream.closed && !stream.destroyed) stream.write('x');
    }, 500);
    stream.once('close', () => {
      clearInterval(drip);
      setTimeout(one, 50);
    });
  };
  for (let i = 0; i < count; i++) one();
  return state;
}

/** Rapid reset (CVE-2023-44487): batches of request + RST_STREAM(CANCEL) to a hanging upstream; a new session after each GOAWAY. */
function rapidReset(
  port: number,
  stopped: () => boolean,
): { streams: number; goaways: number; sessions: number } {
  const state = { streams: 0, goaways: 0, sessions: 0 };
  let session: ClientHttp2Session | undefined;
  const fresh = () => {
    const s = connectH2(`http://127.0.0.1:${port}`);
    s.on('error', () => undefined);
    s.on('goaway', () => state.goaways++);
    state.sessions++;
    return s;
  };
  const pump = () => {
    if (stopped()) {
      session?.destroy();
      return;
    }
    if (session === undefined || session.destroyed || session.closed) session = fresh();
    try {
      for (let i = 0; i < RESET_BATCH; i++) {
        const stream = session.request({ ':path': '/up/hang' });
        stream.on('error', () => undefined);
        stream.close(constants.NGHTTP2_CANCEL);
        state.streams++;
      }
    } catch {
      session.destroy();
    }
    setTimeout(pump, RESET_EVERY_MS);
  };
  pump();
  return state;
}

test('abuse soak: idle sockets, partial prefaces, rapid reset and slow bodies leave /hello fast and memory flat', async (t) => {
  const upstream = await hangingUpstream();
  const gw = await startAbuseGateway({
    upstreamPort: upstream.port,
    timeouts: 'connection_seconds: 2, read_seconds: 2, idle_seconds: 30',
  });
  let stopped = false;
  const isStopped = () => stopped;
  try {
    // Warm-up: let the process reach its steady RSS before the baseline.
    for (let i = 0; i < 200; i++) await fetch(`${gw.data}/hello`).then((r) => r.text());
    await sleep(500);
    const rssBefore = rssKiB(gw.pid);
    const fdsBefore = fdCount(gw.pid);

    const control = new Worker(CONTROL, {
      eval: true,
      workerData: { port: gw.dataPort, baselineMs: BASELINE_MS },
    });
    const controlDone = new Promise<{ baseline: number[]; latencies: number[]; failures: number }>(
      (resolve) => control.once('message', resolve),
    );
    await sleep(BASELINE_MS);
    const cpuBefore = cpuMs(gw.pid);
    const idle = holdSockets(gw.dataPort, IDLE_SOCKETS, undefined, isStopped);
    const partial = holdSockets(gw.dataPort, PARTIAL_PREFACES, PARTIAL_PREFACE, isStopped);
    const h1 = slowH1Bodies(gw.dataPort, SLOW_H1_BODIES, isStopped);
    const h2 = slowH2Streams(gw.dataPort, SLOW_H2_STREAMS, isStopped);
    const reset = rapidReset(gw.dataPort, isStopped);

    let rssPeak = rssBefore;
    let fdsPeak = fdsBefore;
    const started = Date.now();
    while (Date.now() - started < ABUSE_MS) {
      await sleep(500);
      rssPeak = Math.max(rssPeak, rssKiB(gw.pid));
      fdsPeak = Math.max(fdsPeak, fdCount(gw.pid));
    }
    stopped = true;
    control.postMessage('stop');
    const { baseline, latencies, failures } = await controlDone;
    await control.terminate();
    for (const s of [...idle, ...partial, ...h1.sockets]) s.destroy();
    h2.session().destroy();
    const rssAfter = rssKiB(gw.pid);
    await waitFor(() => fdCount(gw.pid) <= fdsBefore + 10, {
      timeoutMs: 15_000,
      what: 'descriptors back to baseline',
    });
    const fdsAfter = fdCount(gw.pid);

    const sorted = [...latencies].sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    const p99 = percentile(sorted, 99);
    const max = sorted.at(-1) ?? NaN;
    const growthMiB = (rssPeak - rssBefore) / 1024;
    const base = [...baseline].sort((a, b) => a - b);
    const figures = {
      gateway_cpu_ms: cpuMs(gw.pid) - cpuBefore,
      baseline_p50_ms: +percentile(base, 50).toFixed(1),
      baseline_p99_ms: +percentile(base, 99).toFixed(1),
      control_requests: latencies.length,
      control_failures: failures,
      p50_ms: +p50.toFixed(1),
      p99_ms: +p99.toFixed(1),
      max_ms: +max.toFixed(1),
      rss_before_mib: +(rssBefore / 1024).toFixed(1),
      rss_peak_mib: +(rssPeak / 1024).toFixed(1),
      rss_after_mib: +(rssAfter / 1024).toFixed(1),
      rss_growth_mib: +growthMiB.toFixed(1),
      fds_before: fdsBefore,
      fds_peak: fdsPeak,
      fds_after: fdsAfter,
      reset_streams: reset.streams,
      reset_sessions: reset.sessions,
      goaways: reset.goaways,
      idle_sockets_closed_by_gateway: (idle as unknown as { closedByGateway: number }).closedByGateway,
      partial_prefaces_closed_by_gateway: (partial as unknown as { closedByGateway: number }).closedByGateway,
      slow_h1_bodies_408: h1.answered408,
      slow_h2_streams_408: h2.answered408,
      upstream_connections: upstream.accepted,
      log_bytes: gw.process.output().length,
    };
    t.diagnostic(`abuse soak figures: ${JSON.stringify(figures)}`);
    console.log('abuse soak figures', figures);

    assert.equal(failures, 0, 'control requests failed');
    assert.ok(latencies.length > 100, `only ${latencies.length} control requests completed`);
    // 250 ms, or five times the p99 the same client saw before the abuse when the machine itself
    // is that slow (a full suite on two cores): the bound is on what the abuse adds.
    const bound = Math.max(250, 5 * percentile(base, 99));
    assert.ok(p99 < bound, `control p99 ${p99.toFixed(1)} ms (bound ${bound.toFixed(0)} ms)`);
    assert.ok(growthMiB < 100, `RSS grew ${growthMiB.toFixed(1)} MiB`);
    assert.ok(reset.goaways > 0, 'rapid reset never got a GOAWAY');
    assert.ok(h1.answered408 > 0 && h2.answered408 > 0, 'slow bodies were not answered 408');
  } finally {
    stopped = true;
    await gw.stop();
    await upstream.close();
  }
});

/**
 * The AI streaming scenario of `npm run bench` (opt-in: BENCH_SCENARIOS lists
 * `ai-stream`; docs/benchmarks.md, "AI streaming"). A local OpenAI-format
 * provider (bench/llm-stream-server.ts) streams a fixed number of tokens per
 * chat completion, one server-sent event per token. A driver in this process
 * keeps a fixed number of streaming requests in flight for a few seconds, in
 * turn against three targets:
 *
 * - `direct`: the provider itself (`/v1/chat/completions`);
 * - the gateway, an OpenAI-format client through `ai-proxy` to the same
 *   provider (same format: events relayed one by one, usage asked for and
 *   kept back from a client that did not ask);
 * - the gateway, an Anthropic-format client (`/v1/messages`) through the same
 *   node: every event translated.
 *
 * Each request's time to first token (TTFT) is taken from just before the
 * request is written to the arrival of the chunk carrying the first content
 * token. Reports the TTFT median and p99, what the gateway adds to the
 * direct median, and the CPU time of the process serving the stream (the
 * provider for `direct`, the gateway for the others; utime + stime from /proc)
 * per token received, with its ratio to the provider's own.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { startNodeProcess, treeCpuSeconds } from './measure.js';

export const AI_STREAM_SCENARIO = 'ai-stream';

export interface AiStreamBenchOptions {
  seconds: number;
  rounds: number;
  /** Streams in flight. */
  streams: number;
  /** Tokens per streamed answer. */
  tokens: number;
  /** Milliseconds between the provider's token events (0: back to back). */
  intervalMs: number;
  /** CPU for the gateway (taskset), or null. */
  targetCpu: string | null;
  dir: string;
  children: ChildProcess[];
}

/** What one driver run saw. */
export interface DriveResult {
  /** Streams that ended with every token. */
  streams: number;
  tokens: number;
  errors: number;
  /** Time to first token of each complete stream, ms. */
  ttftMs: number[];
  elapsedS: number;
}

export interface AiStreamRow {
  target: string;
  streams: number;
  tokensPerS: number;
  ttftP50: number;
  ttftP99: number;
  /** Server-side CPU per token received, µs (provider for direct, gateway otherwise). */
  cpuUsPerToken: number | null;
  errors: number;
}

type ClientFormat = 'openai' | 'anthropic';

const FIRST = '"tok"';
const TOKEN = /tok"/g;

function body(format: ClientFormat): string {
  const messages = [{ role: 'user', content: 'Count to sixty-four, one word per token.' }];
  return JSON.stringify(
    format === 'openai'
      ? { model: 'bench-model', stream: true, messages }
      : { model: 'bench-model', stream: true, max_tokens: 256, messages },
  );
}

/** One streamed call; resolves to its TTFT (ms) and tokens, or rejects. */
function streamOnce(
  agent: Agent,
  port: number,
  path: string,
  format: ClientFormat,
  payload: string,
): Promise<{ ttftMs: number; tokens: number }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let ttft: bigint | undefined;
    let text = '';
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...(format === 'anthropic' ? { 'anthropic-version': '2023-06-01' } : {}),
        },
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
          if (ttft === undefined && text.includes(FIRST)) ttft = process.hrtime.bigint();
        });
        res.on('end', () => {
          if (res.statusCode !== 200 || ttft === undefined) {
            reject(new Error(`${path}: status ${res.statusCode}: ${text.slice(0, 200)}`));
            return;
          }
          resolve({ ttftMs: Number(ttft - started) / 1e6, tokens: text.match(TOKEN)?.length ?? 0 });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Keeps `streams` streaming calls in flight against `port` + `path` for
 * `seconds`. A stream counts when it ended with all `tokens`.
 */
export async function drive(o: {
  port: number;
  path: string;
  format: ClientFormat;
  streams: number;
  seconds: number;
  tokens: number;
}): Promise<DriveResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: o.streams });
  const payload = body(o.format);
  const result: DriveResult = { streams: 0, tokens: 0, errors: 0, ttftMs: [], elapsedS: 0 };
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(o.seconds * 1e9));
  const loop = async () => {
    while (process.hrtime.bigint() < deadline) {
      try {
        const r = await streamOnce(agent, o.port, o.path, o.format, payload);
        result.tokens += r.tokens;
        if (r.tokens >= o.tokens) {
          result.streams++;
          result.ttftMs.push(r.ttftMs);
        } else result.errors++;
      } catch {
        result.errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: o.streams }, loop));
  result.elapsedS = Number(process.hrtime.bigint() - start) / 1e9;
  agent.destroy();
  return result;
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
};
const median = (xs: number[]) => percentile(xs, 50);

function gatewayYaml(providerPort: number): string {
  return `
routes:
  - { name: llm, match: { path: /llm/* }, policy: llm }
policies:
  - name: llm
    nodes:
      - { id: in, type: listener }
      - id: ai
        type: ai-proxy
        config:
          targets:
            - { name: local, provider: openai-compatible, endpoint: "http://127.0.0.1:${providerPort}", model: bench-model }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: ai.in }
      - { from: ai.success, to: out.in }
      - { from: ai.error, to: out.in }
`;
}

/** Runs the scenario; resolves to its three rows (direct, then the two gateway rows). */
export async function runAiStreamBench(o: AiStreamBenchOptions): Promise<AiStreamRow[]> {
  const provider = await startNodeProcess(
    ['--import', 'tsx', 'bench/llm-stream-server.ts'],
    { AI_TOKENS: String(o.tokens), AI_TOKEN_INTERVAL_MS: String(o.intervalMs) },
    null,
    o.children,
  );
  const system = join(o.dir, 'ai-stream-system.yaml');
  const gateway = join(o.dir, 'ai-stream-gateway.yaml');
  writeFileSync(system, 'listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info, format: json }\n');
  writeFileSync(gateway, gatewayYaml(provider.port));
  const gw = await startNodeProcess(
    ['bin/switchyard.js', '--system-config', system, '--gateway-config', gateway],
    { LOG_LEVEL: 'info' },
    o.targetCpu,
    o.children,
  );
  const targets = [
    {
      target: 'direct: OpenAI-format provider',
      port: provider.port,
      path: '/v1/chat/completions',
      format: 'openai' as const,
      pid: provider.pid,
    },
    {
      target: 'switchyard ai-proxy, OpenAI client (relayed)',
      port: gw.port,
      path: '/llm/v1/chat/completions',
      format: 'openai' as const,
      pid: gw.pid,
    },
    {
      target: 'switchyard ai-proxy, Anthropic client (translated)',
      port: gw.port,
      path: '/llm/v1/messages',
      format: 'anthropic' as const,
      pid: gw.pid,
    },
  ];
  const measure = async (t: (typeof targets)[number], seconds: number) => {
    const before = treeCpuSeconds(t.pid);
    const r = await drive({ ...t, streams: o.streams, seconds, tokens: o.tokens });
    const after = treeCpuSeconds(t.pid);
    const cpuUsPerToken =
      before === null || after === null || r.tokens === 0 ? null : ((after - before) * 1e6) / r.tokens;
    return { ...r, cpuUsPerToken };
  };
  // Warm-up (JIT, keep-alive pools), then interleaved rounds in an order rotated by one each round.
  for (const t of targets) await measure(t, Math.min(2, o.seconds));
  const results = targets.map(() => [] as Awaited<ReturnType<typeof measure>>[]);
  for (let round = 0; round < o.rounds; round++) {
    for (let i = 0; i < targets.length; i++) {
      const k = (i + round) % targets.length;
      results[k]!.push(await measure(targets[k]!, o.seconds));
    }
  }
  return targets.map((t, k) => {
    const rs = results[k]!;
    const cpu = rs.flatMap((r) => (r.cpuUsPerToken === null ? [] : [r.cpuUsPerToken]));
    return {
      target: t.target,
      streams: median(rs.map((r) => r.streams)),
      tokensPerS: median(rs.map((r) => r.tokens / r.elapsedS)),
      ttftP50: median(rs.map((r) => median(r.ttftMs))),
      ttftP99: median(rs.map((r) => percentile(r.ttftMs, 99))),
      cpuUsPerToken: cpu.length === 0 ? null : median(cpu),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  });
}

/**
 * The rows as table cells. `TTFT added` is the row's TTFT median minus the
 * direct call's, `× direct TTFT` their ratio; `× provider CPU` is the row's
 * CPU per token over the provider's own (the direct row's).
 */
export function aiStreamTableRows(rows: AiStreamRow[]): Record<string, string>[] {
  const direct = rows[0];
  return rows.map((r) => ({
    target: r.target,
    'streams/run': String(r.streams),
    'tokens/s': String(Math.round(r.tokensPerS)),
    'TTFT p50 ms': r.ttftP50.toFixed(2),
    'TTFT p99 ms': r.ttftP99.toFixed(2),
    'TTFT added ms': direct === undefined ? '—' : (r.ttftP50 - direct.ttftP50).toFixed(2),
    '× direct TTFT':
      direct === undefined || direct.ttftP50 === 0 ? '—' : `${(r.ttftP50 / direct.ttftP50).toFixed(2)}×`,
    'CPU µs/token': r.cpuUsPerToken === null ? '—' : r.cpuUsPerToken.toFixed(1),
    '× provider CPU':
      r.cpuUsPerToken === null || direct?.cpuUsPerToken == null || direct.cpuUsPerToken === 0
        ? '—'
        : `${(r.cpuUsPerToken / direct.cpuUsPerToken).toFixed(2)}×`,
    errors: String(r.errors),
  }));
}

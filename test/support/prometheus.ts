import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startDaemon, type Daemon } from './daemon.js';

const BINARY = process.env.PROMETHEUS_BIN ?? 'prometheus';
export const PROMTOOL = process.env.PROMTOOL_BIN ?? 'promtool';

/** A real Prometheus server on a random loopback port (the Debian `prometheus` package). */
export interface PrometheusServer {
  readonly daemon: Daemon;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** An instant query through the HTTP API; resolves with the result vector. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  stop(): Promise<void>;
}

/** Runs `promtool args…` and returns its exit status and output. */
export function promtool(args: string[], cwd?: string): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL, args, { encoding: 'utf8', ...(cwd === undefined ? {} : { cwd }) });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Starts Prometheus with `configFile`; its TSDB lives in `dataDir`. */
export async function startPrometheus(configFile: string, dataDir: string): Promise<PrometheusServer> {
  const { daemon, ports } = await startDaemon({
    name: 'prometheus',
    ports: 1,
    timeoutMs: 30000,
    command: ([port], attempt) => ({
      bin: BINARY,
      args: [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dataDir, `data-${attempt}`)}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
    }),
    ready: async ([port]) => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/-/ready`)).status === 200;
      } catch {
        return false;
      }
    },
  });
  const url = `http://127.0.0.1:${ports[0]}`;
  return {
    daemon,
    url,
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const body = (await res.json()) as {
        status: string;
        error?: string;
        data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
      };
      if (body.status !== 'success') throw new Error(`query ${expr} failed: ${body.error ?? res.status}`);
      return body.data?.result ?? [];
    },
    stop: () => daemon.stop(),
  };
}

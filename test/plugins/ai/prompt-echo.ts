/** A gateway route through one prompt node (YAML under `config:`) to an echoing origin: what the LLM would receive. */
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { echo, startOrigin, type Origin } from '../../support/origins.js';

export interface PromptRoute {
  gw: RunningGateway;
  origin: Origin;
  /** POSTs `body`; the status, and the JSON body the origin received (undefined when it was not reached). */
  send(path: string, body: unknown): Promise<{ status: number; sent: unknown; answer: string }>;
  stop(): Promise<void>;
}

export async function promptRoute(type: string, config: string): Promise<PromptRoute> {
  const origin = await startOrigin(echo('llm'));
  const gw = await startGateway(`
routes:
  - { name: chat, match: { path: /v1/* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - id: prompt
        type: ${type}
        config: ${config}
      - { id: llm, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: prompt.in }
      - { from: prompt.success, to: llm.in }
      - { from: prompt.error, to: client.in }
      - { from: llm.success, to: client.in }
`);
  return {
    gw,
    origin,
    async send(path, body) {
      const res = await request(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const echoed =
        res.status === 200
          ? (JSON.parse(res.body) as { body: string; headers: Record<string, string> })
          : undefined;
      return {
        status: res.status,
        sent: echoed === undefined ? undefined : JSON.parse(echoed.body),
        answer: res.body,
      };
    },
    async stop() {
      await gw.stop();
      await origin.close();
    },
  };
}

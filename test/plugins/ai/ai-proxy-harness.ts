/**
 * A gateway (in process, with its Admin API and tracing) whose routes each run one ai-proxy node,
 * in front of the local providers of test/support/llm-providers.ts, and the official SDKs
 * pointed at it. Routes: `/<name>/…` runs policy `<name>`.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startAdmin, type AdminHarness } from '../../admin/harness.js';
import { startLlmProvider, type LlmProvider } from '../../support/llm-providers.js';

export const VIEWER_PASSWORD = 'Viewer-Pw-123456';

export interface AiHarness extends AdminHarness {
  openaiProvider: LlmProvider;
  anthropicProvider: LlmProvider;
  geminiProvider: LlmProvider;
  /** The openai SDK for route `name` (baseURL `<gateway>/<name>/v1`), retries off. */
  openai(name: string): OpenAI;
  /** The Anthropic SDK for route `name` (baseURL `<gateway>/<name>`), retries off. */
  anthropic(name: string): Anthropic;
}

export type TargetConfig = Record<string, unknown>;

export interface PolicySpec {
  targets: TargetConfig[];
  /** Extra ai-proxy config keys. */
  config?: Record<string, unknown>;
  /** A response-rewrite after ai-proxy setting these headers (templated). */
  headers?: Record<string, string>;
}

/** The gateway.yaml (JSON is YAML) of one route and policy per entry. */
export function gatewayYaml(policies: Record<string, PolicySpec>): string {
  const routes = Object.keys(policies).map((name) => ({ name, match: { path: `/${name}/*` }, policy: name }));
  const list = Object.entries(policies).map(([name, spec]) => {
    const nodes: Record<string, unknown>[] = [
      { id: 'in', type: 'listener' },
      { id: 'ai', type: 'ai-proxy', config: { targets: spec.targets, ...spec.config } },
      { id: 'out', type: 'client' },
    ];
    // The error port to the client: the prepared OpenAI-style body goes out as ai-proxy wrote it.
    const edges = [
      { from: 'in.out', to: 'ai.in' },
      { from: 'ai.error', to: 'out.in' },
    ];
    if (spec.headers === undefined) edges.push({ from: 'ai.success', to: 'out.in' });
    else {
      nodes.push({ id: 'tag', type: 'response-rewrite', config: { headers: { set: spec.headers } } });
      edges.push({ from: 'ai.success', to: 'tag.in' }, { from: 'tag.success', to: 'out.in' });
    }
    return { name, nodes, edges };
  });
  return JSON.stringify({ routes, policies: list }, null, 1);
}

export const openaiTarget = (p: LlmProvider, extra: TargetConfig = {}): TargetConfig => ({
  name: 'openai-local',
  provider: 'openai-compatible',
  endpoint: p.url,
  api_key: 'openai-test-key',
  model: 'gpt-4o-mini',
  ...extra,
});

export const anthropicTarget = (p: LlmProvider, extra: TargetConfig = {}): TargetConfig => ({
  name: 'anthropic-local',
  provider: 'anthropic',
  endpoint: p.url,
  api_key: 'anthropic-test-key',
  model: 'claude-3-5-haiku-20241022',
  ...extra,
});

export const geminiTarget = (p: LlmProvider, extra: TargetConfig = {}): TargetConfig => ({
  name: 'gemini-local',
  provider: 'gemini',
  endpoint: p.url,
  api_key: 'gemini-test-key',
  model: 'gemini-2.0-flash',
  ...extra,
});

/** Starts the providers, then the gateway built from `policies(providers)`. */
export async function startAiHarness(
  policies: (p: {
    openai: LlmProvider;
    anthropic: LlmProvider;
    gemini: LlmProvider;
  }) => Record<string, PolicySpec>,
  options: { system?: string } = {},
): Promise<AiHarness> {
  const openaiProvider = await startLlmProvider('openai');
  const anthropicProvider = await startLlmProvider('anthropic');
  const geminiProvider = await startLlmProvider('gemini');
  const h = await startAdmin({
    gatewayYaml: gatewayYaml(
      policies({ openai: openaiProvider, anthropic: anthropicProvider, gemini: geminiProvider }),
    ),
    admin: `users: [{ username: viewer, password: ${VIEWER_PASSWORD}, role: viewer }]`,
    system: `debug: { enabled: true, max_traces: 50 }\n${options.system ?? ''}`,
  });
  return {
    ...h,
    openaiProvider,
    anthropicProvider,
    geminiProvider,
    openai: (name) =>
      new OpenAI({ apiKey: 'client-own-key', baseURL: `${h.data}/${name}/v1`, maxRetries: 0 }),
    anthropic: (name) =>
      new Anthropic({ apiKey: 'client-own-key', baseURL: `${h.data}/${name}`, maxRetries: 0 }),
    async stop() {
      await h.stop();
      await Promise.all([openaiProvider.close(), anthropicProvider.close(), geminiProvider.close()]);
    },
  };
}

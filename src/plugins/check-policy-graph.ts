// The compiler's check of a SwitchyardPolicy graph (docs/kubernetes.md#policy-graphs-switchyarddevv1alpha1): the
// supernode is compiled as the one global rule of a configuration with one trivial policy, so it
// gets the errors gateway.yaml would give — schema, node configs, wiring, params, and the global
// rule's "only `output` continues" — with the key paths moved from `supernodes[0]` to `spec`.
import { checkGatewayShape, type SupernodeConfig } from '../config/gateway.js';
import { ConfigRejected, type ConfigIssue } from '../config/schema-validate.js';
import type { Logger } from '../core/logger.js';
import { compileWith } from './compile-with.js';
import type { PolicyCheck } from '../kubernetes/policy-crd.js';

/** Verdicts kept, by the checked text: a sync re-checks only what changed. */
const CACHE_MAX = 1000;

function issueText(issue: ConfigIssue): string {
  const path = issue.path
    .replace(/^supernodes\[0\]/, 'spec')
    .replace(/^global_rules\[0\]\.params/, 'params')
    .replace(/^global_rules\[0\]\.supernode$/, 'spec');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

export function policyChecker(logger: Logger, env: NodeJS.ProcessEnv): PolicyCheck {
  const cache = new Map<string, string | undefined>();
  return (supernode: SupernodeConfig, rule) => {
    const key = JSON.stringify([supernode, rule ?? null]);
    if (cache.has(key)) return cache.get(key);
    let verdict: string | undefined;
    try {
      const config = checkGatewayShape(
        structuredClone({
          supernodes: [supernode],
          global_rules: [
            {
              name: 'check',
              supernode: supernode.name,
              ...(rule?.params === undefined ? {} : { params: rule.params }),
              ...(rule?.phase === undefined ? {} : { phase: rule.phase }),
            },
          ],
          policies: [
            {
              name: 'check',
              nodes: [
                { id: 'in', type: 'listener' },
                { id: 'out', type: 'client' },
              ],
              edges: [{ from: 'in.out', to: 'out.in' }],
            },
          ],
        }),
      );
      const runtime = compileWith(config, logger, env);
      void runtime.close();
    } catch (err) {
      if (!(err instanceof ConfigRejected)) throw err;
      verdict = err.issues.map(issueText).join('; ');
    }
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(key, verdict);
    return verdict;
  };
}

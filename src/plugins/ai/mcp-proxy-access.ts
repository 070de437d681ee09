import type { Consumer } from '../../core/context.js';
import { ConfigError } from '../../core/plugin.js';

/** One `access:` entry of an mcp-proxy node, as configured. */
export interface McpAccessRuleConfig {
  consumer?: string;
  group?: string;
  allow?: string[];
  deny?: string[];
}

/** Why a tool is refused, for the MCP error result, the log and the trace. */
export type Verdict = { allowed: true } | { allowed: false; reason: string };

interface Rule {
  readonly index: number;
  readonly consumer: string | undefined;
  readonly group: string | undefined;
  readonly allow: readonly Glob[] | undefined;
  readonly deny: readonly Glob[];
}

interface Glob {
  readonly source: string;
  matches(name: string): boolean;
}

/**
 * The `access:` rules on prefixed tool names. A rule applies to the consumer it names, to the
 * members of the group it names, or, naming neither, to every request (anonymous ones too). A
 * tool is refused when a `deny` glob of an applying rule matches it, or when applying rules
 * carry `allow` lists and none of their globs matches it. No applying rule: every tool is allowed.
 */
export class McpAccess {
  readonly #rules: readonly Rule[];

  constructor(rules: readonly McpAccessRuleConfig[]) {
    this.#rules = rules.map((r, index) => {
      if (r.consumer !== undefined && r.group !== undefined)
        throw new ConfigError(`access[${index}]`, 'names both consumer and group; give one per rule');
      return {
        index,
        consumer: r.consumer,
        group: r.group,
        allow: r.allow?.map(compileGlob),
        deny: (r.deny ?? []).map(compileGlob),
      };
    });
  }

  get empty(): boolean {
    return this.#rules.length === 0;
  }

  verdict(consumer: Consumer | undefined, tool: string): Verdict {
    let allowLists = 0;
    let allowed = false;
    for (const rule of this.#rules) {
      if (!applies(rule, consumer)) continue;
      for (const g of rule.deny)
        if (g.matches(tool))
          return { allowed: false, reason: `denied by access[${rule.index}] (deny '${g.source}')` };
      if (rule.allow !== undefined) {
        allowLists++;
        if (!allowed && rule.allow.some((g) => g.matches(tool))) allowed = true;
      }
    }
    if (allowLists > 0 && !allowed)
      return { allowed: false, reason: 'not in any allow list of the access rules' };
    return { allowed: true };
  }
}

function applies(rule: Rule, consumer: Consumer | undefined): boolean {
  if (rule.consumer !== undefined) return consumer?.name === rule.consumer;
  if (rule.group !== undefined) return consumer?.group === rule.group;
  return true;
}

/**
 * `*` any run of characters (also none), `?` one character, anything else itself. Matched by
 * the classic two-pointer walk: linear in practice, never exponential, no regex built from config.
 */
export function compileGlob(source: string): Glob {
  const p = source;
  return {
    source,
    matches(name: string): boolean {
      let i = 0;
      let j = 0;
      let star = -1;
      let mark = 0;
      while (i < name.length) {
        if (j < p.length && p[j] === '*') {
          star = j++;
          mark = i;
        } else if (j < p.length && (p[j] === '?' || p[j] === name[i])) {
          i++;
          j++;
        } else if (star !== -1) {
          j = star + 1;
          i = ++mark;
        } else return false;
      }
      while (j < p.length && p[j] === '*') j++;
      return j === p.length;
    },
  };
}

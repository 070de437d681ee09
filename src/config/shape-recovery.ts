import { checkGatewayShape, GATEWAY_SECTIONS, type GatewayConfig } from './gateway.js';
import { ConfigRejected, type ConfigIssue } from './schema-validate.js';

const ITEM = new RegExp(`^(${GATEWAY_SECTIONS.join('|')})\\[(\\d+)\\]`);

/**
 * The issues compiling finds in the items a shape check did not refuse, so `validate` reports
 * every error in one pass (docs/configuration.md): the items named by `shapeIssues` are
 * left out, the rest is compiled by `compile`, and its issues come back with their paths pointing
 * at the document's own items. Issues that only follow from a left-out item (they quote its
 * name, e.g. a route naming a policy that was left out) are dropped. Empty when a shape issue is
 * not inside one item (the document or a section itself is wrong).
 */
export function issuesBesideShape(
  raw: unknown,
  shapeIssues: readonly ConfigIssue[],
  compile: (config: GatewayConfig) => readonly ConfigIssue[],
): ConfigIssue[] {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return [];
  const broken = new Map<string, Set<number>>();
  for (const issue of shapeIssues) {
    const m = ITEM.exec(issue.path);
    if (m === null) return [];
    const indexes = broken.get(m[1] as string) ?? new Set<number>();
    indexes.add(Number(m[2]));
    broken.set(m[1] as string, indexes);
  }
  const pruned: Record<string, unknown> = structuredClone(raw) as Record<string, unknown>;
  /** Per section, the original index of each kept item. */
  const kept = new Map<string, number[]>();
  const leftOut = new Set<string>();
  for (const section of GATEWAY_SECTIONS) {
    const items = pruned[section];
    const drop = broken.get(section);
    if (drop === undefined || !Array.isArray(items)) continue;
    const indexes: number[] = [];
    pruned[section] = items.filter((item: unknown, i) => {
      if (!drop.has(i)) indexes.push(i);
      else if (typeof item === 'object' && item !== null) {
        const name = (item as Record<string, unknown>)['name'];
        if (typeof name === 'string') leftOut.add(name);
      }
      return !drop.has(i);
    });
    kept.set(section, indexes);
  }
  let config: GatewayConfig;
  try {
    config = checkGatewayShape(pruned);
  } catch (err) {
    if (err instanceof ConfigRejected) return [];
    throw err;
  }
  const names = [...leftOut].map((name) => `'${name}'`);
  return compile(config)
    .filter((issue) => !names.some((name) => issue.message.includes(name)))
    .map((issue) => {
      const m = ITEM.exec(issue.path);
      const indexes = m === null ? undefined : kept.get(m[1] as string);
      if (m === null || indexes === undefined) return issue;
      const original = indexes[Number(m[2])];
      return original === undefined
        ? issue
        : { ...issue, path: `${m[1]}[${original}]${issue.path.slice(m[0].length)}` };
    });
}

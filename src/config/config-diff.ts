import type { GatewayConfig } from './gateway.js';
import { canonicalValue, SECTIONS } from './canonical.js';
import { sameData } from './same-data.js';
import { yamlLibrary } from './yaml-data.js';

/** One resource that differs between two configurations (docs/config-as-code.md#diff). */
export interface ResourceChange {
  kind: 'added' | 'removed' | 'changed';
  /** `routes`, `policies`, … */
  section: string;
  /** The resource's name; `(order)` for a list whose items are the same but in another order. */
  name: string;
  before?: unknown;
  after?: unknown;
}

const SIGN = { added: '+', removed: '-', changed: '~' } as const;

const itemsOf = (config: unknown, section: string): Record<string, unknown>[] => {
  const list = (config as Record<string, unknown> | undefined)?.[section];
  return Array.isArray(list) ? (list as Record<string, unknown>[]) : [];
};

const nameOf = (item: Record<string, unknown>, index: number): string =>
  typeof item?.['name'] === 'string' ? item['name'] : `#${index}`;

/**
 * The resources added, removed or changed from `before` to `after`, per section, compared
 * semantically (key order aside). Items are matched by name; a list with the same items in
 * another order (routes and global rules run in list order) is one `changed` entry named `(order)`.
 */
export function diffConfigs(before: GatewayConfig, after: GatewayConfig): ResourceChange[] {
  const changes: ResourceChange[] = [];
  const sections: string[] = [...SECTIONS];
  for (const key of [...Object.keys(before), ...Object.keys(after)])
    if (!sections.includes(key)) sections.push(key);
  for (const section of sections) {
    const a = itemsOf(before, section);
    const b = itemsOf(after, section);
    const byName = new Map(a.map((item, i) => [nameOf(item, i), item]));
    const inAfter = new Set(b.map((item, i) => nameOf(item, i)));
    a.forEach((item, i) => {
      const name = nameOf(item, i);
      if (!inAfter.has(name)) changes.push({ kind: 'removed', section, name, before: item });
    });
    b.forEach((item, i) => {
      const name = nameOf(item, i);
      const old = byName.get(name);
      if (old === undefined) changes.push({ kind: 'added', section, name, after: item });
      else if (!sameData(old, item))
        changes.push({ kind: 'changed', section, name, before: old, after: item });
    });
    const keptA = a.map(nameOf).filter((n) => inAfter.has(n));
    const keptB = b.map(nameOf).filter((n) => byName.has(n));
    if (keptA.join('\u0000') !== keptB.join('\u0000'))
      changes.push({ kind: 'changed', section, name: '(order)', before: keptA, after: keptB });
  }
  return changes;
}

/** One resource as YAML, keys in canonical order. */
export function resourceYaml(value: unknown): string {
  return value === undefined ? '' : yamlLibrary().stringify(canonicalValue(value), { lineWidth: 0 });
}

/**
 * The diff output (docs/config-as-code.md#diff): `+ routes/NAME`, `- policies/NAME`,
 * `~ consumers/NAME`, each changed one followed by a unified diff of its YAML.
 */
export function formatChanges(changes: readonly ResourceChange[]): string {
  let out = '';
  for (const change of changes) {
    out += `${SIGN[change.kind]} ${change.section}/${change.name}\n`;
    if (change.kind === 'changed') {
      const label = `${change.section}/${change.name}`;
      out += unifiedDiff(resourceYaml(change.before), resourceYaml(change.after), `a/${label}`, `b/${label}`);
    }
  }
  return out;
}

/** `routes +1 ~2, policies -1`, or `no changes`. */
export function summarizeChanges(changes: readonly ResourceChange[]): string {
  const per = new Map<string, { added: number; removed: number; changed: number }>();
  for (const change of changes) {
    const counts = per.get(change.section) ?? { added: 0, removed: 0, changed: 0 };
    counts[change.kind]++;
    per.set(change.section, counts);
  }
  if (per.size === 0) return 'no changes';
  return [...per]
    .map(([section, c]) =>
      [
        section,
        ...(c.added > 0 ? [`+${c.added}`] : []),
        ...(c.removed > 0 ? [`-${c.removed}`] : []),
        ...(c.changed > 0 ? [`~${c.changed}`] : []),
      ].join(' '),
    )
    .join(', ');
}

const CONTEXT = 3;

/** A unified diff (3 lines of context) of two texts; empty when they are equal. */
export function unifiedDiff(a: string, b: string, fromLabel: string, toLabel: string): string {
  if (a === b) return '';
  const x = a === '' ? [] : a.replace(/\n$/, '').split('\n');
  const y = b === '' ? [] : b.replace(/\n$/, '').split('\n');
  // Longest common subsequence table (resources are small: a few hundred lines at most).
  const n = x.length;
  const m = y.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      (lcs[i] as number[])[j] =
        x[i] === y[j]
          ? ((lcs[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lcs[i + 1] as number[])[j] as number, (lcs[i] as number[])[j + 1] as number);
  type Op = { op: ' ' | '-' | '+'; text: string };
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) {
      ops.push({ op: ' ', text: x[i++] as string });
      j++;
    } else if (
      i < n &&
      (j >= m || ((lcs[i + 1] as number[])[j] as number) >= ((lcs[i] as number[])[j + 1] as number))
    )
      ops.push({ op: '-', text: x[i++] as string });
    else ops.push({ op: '+', text: y[j++] as string });
  }
  // Hunks: runs of changes with up to CONTEXT unchanged lines around them.
  let out = `--- ${fromLabel}\n+++ ${toLabel}\n`;
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && (ops[k] as Op).op === ' ') k++;
    if (k >= ops.length) break;
    const start = Math.max(0, k - CONTEXT);
    let end = k;
    // Extend while the next change is within 2*CONTEXT unchanged lines.
    for (;;) {
      while (end < ops.length && (ops[end] as Op).op !== ' ') end++;
      let gap = end;
      while (gap < ops.length && (ops[gap] as Op).op === ' ') gap++;
      if (gap < ops.length && gap - end <= 2 * CONTEXT) end = gap;
      else {
        end = Math.min(ops.length, end + CONTEXT);
        break;
      }
    }
    const hunk = ops.slice(start, end);
    // Line numbers (1-based) where the hunk starts in each text.
    let fromStart = 1;
    let toStart = 1;
    for (const op of ops.slice(0, start)) {
      if (op.op !== '+') fromStart++;
      if (op.op !== '-') toStart++;
    }
    const fromCount = hunk.filter((o) => o.op !== '+').length;
    const toCount = hunk.filter((o) => o.op !== '-').length;
    out += `@@ -${fromCount === 0 ? fromStart - 1 : fromStart},${fromCount} +${toCount === 0 ? toStart - 1 : toStart},${toCount} @@\n`;
    for (const op of hunk) out += `${op.op}${op.text}\n`;
    k = end;
  }
  return out;
}

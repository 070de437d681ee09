import { useState, type ReactNode } from 'react';

// A visual editor for one condition expression (docs/conditions.md): rules ANDed, and nested
// AND / OR / NOT groups. What it cannot show as rows (a bare group as the whole expression, an
// odd shape) opens as raw JSON, and the Raw JSON toggle is always there (F30).

const OPERATORS = [
  '==',
  '~=',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
  '~~',
  '~*',
  'in',
  'has',
  'contains',
  'ipmatch',
  'present',
  'absent',
  'is_null',
] as const;
const UNARY = new Set(['present', 'absent', 'is_null']);
const LISTS = new Set(['in', 'ipmatch']);
const GROUPS = ['AND', 'OR', 'NOT', '!AND', '!OR'] as const;

interface Rule {
  kind: 'rule';
  subject: string;
  not: boolean;
  op: string;
  value: unknown;
}
interface Group {
  kind: 'group';
  op: string;
  children: Item[];
}
type Item = Rule | Group;

const isGroupHead = (v: unknown): v is string =>
  typeof v === 'string' && (GROUPS as readonly string[]).includes(v.toUpperCase());

/** An array element as a rule or group, or undefined when the builder cannot show it. */
function toItem(raw: unknown): Item | undefined {
  if (!Array.isArray(raw) || raw.length === 0) return undefined;
  const [head, ...rest] = raw as unknown[];
  if (isGroupHead(head)) {
    const children = rest.map(toItem);
    if (children.some((c) => c === undefined)) return undefined;
    return { kind: 'group', op: head.toUpperCase(), children: children as Item[] };
  }
  if (typeof head !== 'string') return undefined;
  const not = rest[0] === '!';
  const [op, value, ...extra] = not ? rest.slice(1) : rest;
  if (typeof op !== 'string' || !(OPERATORS as readonly string[]).includes(op) || extra.length > 0)
    return undefined;
  if (UNARY.has(op) !== (value === undefined)) return undefined;
  return { kind: 'rule', subject: head, not, op, value };
}

/** The expression as rows, or undefined when it must be edited as JSON. */
export function parseExpression(raw: unknown): Item[] | undefined {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return undefined;
  if (isGroupHead(raw[0])) return undefined; // A bare group as the whole expression: kept as written.
  const items = raw.map(toItem);
  return items.some((i) => i === undefined) ? undefined : (items as Item[]);
}

function fromItem(item: Item): unknown[] {
  if (item.kind === 'group') return [item.op, ...item.children.map(fromItem)];
  const head = item.not ? [item.subject, '!', item.op] : [item.subject, item.op];
  return UNARY.has(item.op) ? head : [...head, item.value];
}

export const serializeExpression = (items: readonly Item[]): unknown[] => items.map(fromItem);

/** The value box's text: strings as they are, anything else as JSON. */
const valueText = (v: unknown): string =>
  v === undefined
    ? ''
    : typeof v === 'string'
      ? v
      : Array.isArray(v) && v.every((x) => typeof x === 'string')
        ? v.join(', ')
        : JSON.stringify(v);

/** Typed text → a value: lists for in/ipmatch (comma-separated or JSON), numbers and booleans as such. */
function parseValue(text: string, op: string): unknown {
  const t = text.trim();
  if (LISTS.has(op)) {
    if (t.startsWith('[')) {
      try {
        return JSON.parse(t) as unknown;
      } catch {
        // Fall through: a list of texts.
      }
    }
    return t === '' ? [] : t.split(',').map((s) => s.trim());
  }
  if (/^-?\d+(\.\d+)?$/.test(t) && ['>', '>=', '<', '<='].includes(op)) return Number(t);
  if (t === 'true' || t === 'false') return t === 'true';
  return text;
}

const newRule = (): Rule => ({ kind: 'rule', subject: '', not: false, op: '==', value: '' });

function Items(props: { items: Item[]; onChange: (items: Item[]) => void; name: string; depth: number }) {
  const { items, onChange, name, depth } = props;
  const set = (i: number, next: Item) => onChange(items.map((it, j) => (j === i ? next : it)));
  const remove = (i: number) => onChange(items.filter((_, j) => j !== i));
  return (
    <div className="condition-items">
      {items.map((item, i) => {
        const at = `${name} ${i + 1}`;
        if (item.kind === 'group')
          return (
            <fieldset key={i} className="condition-group" data-depth={depth}>
              <legend>
                <select
                  aria-label={`${at} group`}
                  value={item.op}
                  onChange={(e) => set(i, { ...item, op: e.target.value })}
                >
                  {GROUPS.map((g) => (
                    <option key={g}>{g}</option>
                  ))}
                </select>
                <button
                  type="button"
                  className="small danger"
                  aria-label={`Remove ${at}`}
                  onClick={() => remove(i)}
                >
                  ×
                </button>
              </legend>
              <Items
                items={item.children}
                name={at}
                depth={depth + 1}
                onChange={(children) => set(i, { ...item, children })}
              />
            </fieldset>
          );
        return (
          <div key={i} className="condition-rule" data-rule={at}>
            <input
              aria-label={`${at} subject`}
              placeholder="http_x_tenant, arg_id, $.user.role"
              value={item.subject}
              onChange={(e) => set(i, { ...item, subject: e.target.value })}
            />
            <label className="switch" title="Invert the rule (the ! form)">
              <input
                type="checkbox"
                aria-label={`${at} not`}
                checked={item.not}
                onChange={(e) => set(i, { ...item, not: e.target.checked })}
              />
              not
            </label>
            <select
              aria-label={`${at} operator`}
              value={item.op}
              onChange={(e) => {
                const op = e.target.value;
                const value = UNARY.has(op) ? undefined : parseValue(valueText(item.value), op);
                set(i, { ...item, op, value });
              }}
            >
              {OPERATORS.map((o) => (
                <option key={o}>{o}</option>
              ))}
            </select>
            {!UNARY.has(item.op) && (
              <input
                aria-label={`${at} value`}
                placeholder={LISTS.has(item.op) ? 'a, b, c' : 'value'}
                value={valueText(item.value)}
                onChange={(e) => set(i, { ...item, value: parseValue(e.target.value, item.op) })}
              />
            )}
            <button
              type="button"
              className="small danger"
              aria-label={`Remove ${at}`}
              onClick={() => remove(i)}
            >
              ×
            </button>
          </div>
        );
      })}
      <div className="condition-add">
        <button
          type="button"
          className="small"
          aria-label={`Add rule to ${name}`}
          onClick={() => onChange([...items, newRule()])}
        >
          + Rule
        </button>
        <button
          type="button"
          className="small"
          aria-label={`Add group to ${name}`}
          onClick={() => onChange([...items, { kind: 'group', op: 'OR', children: [newRule()] }])}
        >
          + Group
        </button>
      </div>
    </div>
  );
}

/**
 * One condition expression as rule rows and groups, with a Raw JSON toggle; `raw` renders the
 * JSON editor the form uses for values it has no control for.
 */
export function ConditionBuilder(props: {
  name: string;
  value: unknown;
  onChange: (value: unknown) => void;
  raw: (value: unknown, onChange: (v: unknown) => void) => ReactNode;
}) {
  const parsed = parseExpression(props.value);
  const [mode, setMode] = useState<'rows' | 'raw'>(parsed === undefined ? 'raw' : 'rows');
  const [version, setVersion] = useState(0);
  return (
    <div className="condition-builder" role="group" aria-label={`${props.name} builder`}>
      <div className="segmented" role="tablist" aria-label={`${props.name} editor`}>
        <button
          type="button"
          role="tab"
          aria-selected={mode === 'rows'}
          disabled={parsed === undefined}
          title={parsed === undefined ? 'This expression has a shape the builder cannot show' : undefined}
          onClick={() => setMode('rows')}
        >
          Rules
        </button>
        <button
          type="button"
          role="tab"
          aria-selected={mode === 'raw'}
          onClick={() => {
            setVersion((v) => v + 1);
            setMode('raw');
          }}
        >
          Raw JSON
        </button>
      </div>
      {mode === 'rows' && parsed !== undefined ? (
        <Items
          items={parsed}
          name={props.name}
          depth={0}
          onChange={(items) => props.onChange(items.length === 0 ? undefined : serializeExpression(items))}
        />
      ) : (
        <div key={version}>{props.raw(props.value, props.onChange)}</div>
      )}
    </div>
  );
}

/** Keys that hold one condition expression (docs/conditions.md): condition, request-validation, rules[].match / case. */
export const isConditionKey = (name: string, schema: Record<string, unknown>): boolean =>
  ['conditions', 'condition', 'match', 'case'].includes(name) &&
  (schema.type === undefined || schema.type === 'array') &&
  (schema.items === undefined || Array.isArray(schema.items) === false);

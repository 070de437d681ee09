import { useEffect, useState } from 'react';
import { getJson } from '../../api.js';

type RefKind = 'stores' | 'plugin-configs' | 'policies';

interface Named {
  name: string;
  type?: string;
}

/** The names of one resource kind, read when the select first shows. */
function useNames(kind: RefKind): Named[] | undefined {
  const [names, setNames] = useState<Named[] | undefined>();
  useEffect(() => {
    let live = true;
    getJson<Named[]>(`/api/${kind}`).then(
      (list) => live && setNames(list),
      () => live && setNames([]),
    );
    return () => {
      live = false;
    };
  }, [kind]);
  return names;
}

/**
 * A reference to a named resource (a store, a shared config, a policy) as a select of the names
 * that exist, instead of free text (F30). A stored name that no longer exists stays selectable,
 * marked missing, so opening a form never changes the config.
 */
export function ReferenceSelect(props: {
  kind: RefKind;
  label: string;
  value: string | undefined;
  onChange: (name: string | undefined) => void;
  /** Only resources of this type (shared configs for one node type). */
  type?: string;
  none?: string;
}) {
  const names = useNames(props.kind);
  const options = (names ?? [])
    .filter((n) => props.type === undefined || n.type === undefined || n.type === props.type)
    .map((n) => n.name);
  const current = props.value ?? '';
  const missing = current !== '' && names !== undefined && !options.includes(current);
  return (
    <select
      aria-label={props.label}
      value={current}
      onChange={(e) => props.onChange(e.target.value === '' ? undefined : e.target.value)}
    >
      <option value="">{props.none ?? '(none)'}</option>
      {current !== '' && (names === undefined || missing) && (
        <option value={current}>{missing ? `${current} (missing)` : current}</option>
      )}
      {options.map((n) => (
        <option key={n} value={n}>
          {n}
        </option>
      ))}
    </select>
  );
}

/** A string key that names a `stores:` entry (`store`, or described as one). */
export const isStoreReference = (name: string, schema: Record<string, unknown>): boolean =>
  name === 'store' ||
  (typeof schema.description === 'string' && /name of a `stores:` entry/i.test(schema.description));

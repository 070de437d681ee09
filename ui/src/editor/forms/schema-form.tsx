import { useMemo } from 'react';
import type { PluginEntry } from '../../types.js';
import { checkConfigIssues } from '../schema-check.js';
import { ObjectFields, type FormContext } from './field.js';
import { setAt, type Key } from './value-path.js';

interface Props {
  plugin: PluginEntry;
  config: Record<string, unknown> | null | undefined;
  hasConfigRef: boolean;
  readOnly: boolean;
  /** Every change, applied to the graph at once (undo takes it back). */
  onChange: (config: Record<string, unknown>, field: string) => void;
}

/**
 * A node's config as a form generated from its plugin's JSON Schema: one
 * typed control per key, defaults as placeholders, problems under the key
 * they are about (the same schema the gateway checks), template previews.
 */
export function SchemaForm({ plugin, config, hasConfigRef, readOnly, onChange }: Props) {
  const root = config ?? {};
  const issues = useMemo(() => {
    const byPath = new Map<string, string[]>();
    for (const i of checkConfigIssues(plugin.schema, root, hasConfigRef)) {
      byPath.set(i.path, [...(byPath.get(i.path) ?? []), i.message]);
    }
    return byPath;
  }, [plugin.schema, root, hasConfigRef]);
  const known = new Set(Object.keys(plugin.schema.properties ?? {}));
  const stray = [...issues.entries()].filter(([path]) => {
    const first = path.split('.')[1];
    return path === 'config' || first === undefined || !known.has(first);
  });

  const ctx: FormContext = {
    root,
    issues,
    templated: plugin.templated,
    onChange: (path: readonly Key[], value: unknown) =>
      onChange(setAt(root, path, value) as Record<string, unknown>, path.map(String).join('.')),
  };

  return (
    <form className="schema-form" aria-label="Node config form" onSubmit={(e) => e.preventDefault()}>
      <fieldset disabled={readOnly}>
        {Object.keys(plugin.schema.properties ?? {}).length === 0 && (
          <p className="muted">This node type has no config.</p>
        )}
        <ObjectFields schema={plugin.schema} path={[]} ctx={ctx} />
      </fieldset>
      {stray.length > 0 && (
        <div className="error-box" role="alert" aria-label="Config problems">
          <ul>
            {stray.map(([path, messages]) => (
              <li key={path}>
                {path}: {messages.join('; ')}
              </li>
            ))}
          </ul>
        </div>
      )}
    </form>
  );
}

/** True when the config has no problem the form would show. */
export const configValid = (plugin: PluginEntry, config: unknown, hasConfigRef: boolean): boolean =>
  checkConfigIssues(plugin.schema, config ?? {}, hasConfigRef).length === 0;

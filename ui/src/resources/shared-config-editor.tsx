import { useEffect, useState } from 'react';
import { getJson } from '../api.js';
import { useEditorKeys, useUndoable } from '../editing/history.js';
import { UndoBar } from '../editing/undo-bar.js';
import { confirmDiscard, useUnsavedGuard } from '../editing/unsaved.js';
import { RawEditor } from '../editor/forms/raw-editor.js';
import { SchemaForm } from '../editor/forms/schema-form.js';
import { checkConfig } from '../editor/schema-check.js';
import { useReadOnly } from '../session/role.js';
import type { PluginEntry } from '../types.js';

export interface SharedConfigValue {
  type?: string;
  description?: string;
  config_ref?: string;
  merge?: 'shallow' | 'deep';
  config?: Record<string, unknown>;
  [key: string]: unknown;
}

interface Props {
  name: string;
  initial: SharedConfigValue;
  onSave: (value: SharedConfigValue) => Promise<boolean>;
  onClose: () => void;
}

/**
 * A shared plugin config: its node type, then that type's config as the same
 * schema-generated form the policy inspector uses (or YAML/JSON), with undo,
 * redo and the unsaved-changes guard.
 */
export function SharedConfigEditor({ name, initial, onSave, onClose }: Props) {
  const readOnly = useReadOnly();
  const [catalog, setCatalog] = useState<Map<string, PluginEntry> | undefined>();
  const [mode, setMode] = useState<'form' | 'raw'>('form');
  const [rawVersion, setRawVersion] = useState(0);
  const doc = useUndoable<SharedConfigValue>(initial);
  const value = doc.value;
  useUnsavedGuard(doc.dirty && !readOnly);

  useEffect(() => {
    void getJson<{ plugins: PluginEntry[] }>('/api/plugins').then(({ plugins }) =>
      setCatalog(new Map(plugins.map((p) => [p.type, p]))),
    );
  }, []);

  const save = async () => {
    if (await onSave(value)) doc.load(value);
  };
  useEditorKeys({ undo: doc.undo, redo: doc.redo, save: () => void save(), enabled: !readOnly });

  const plugin = value.type === undefined ? undefined : catalog?.get(value.type);
  const set = (key: string, v: unknown) => {
    const next: SharedConfigValue = { ...value };
    if (v === undefined || v === '') delete next[key];
    else next[key] = v;
    doc.set(next, key);
  };

  const applyRaw = (parsed: unknown): string[] => {
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      return ['A shared config is an object (type, config, …).'];
    const next = parsed as SharedConfigValue;
    const entry = next.type === undefined ? undefined : catalog?.get(next.type);
    if (entry !== undefined) {
      const found = checkConfig(entry.schema, next.config ?? {}, next.config_ref !== undefined);
      if (found.length > 0) return found;
    }
    doc.set(next);
    setRawVersion((v) => v + 1);
    return [];
  };

  return (
    <section className="panel" aria-label="Edit shared config">
      <div className="panel-head">
        <h2>
          {readOnly ? 'View' : 'Edit'} shared config <code>{name}</code>
        </h2>
        <UndoBar history={doc} dirty={doc.dirty} readOnly={readOnly} />
      </div>
      <div className="segmented" role="tablist" aria-label="Shared config editor">
        <button type="button" role="tab" aria-selected={mode === 'form'} onClick={() => setMode('form')}>
          Form
        </button>
        <button
          type="button"
          role="tab"
          aria-selected={mode === 'raw'}
          onClick={() => {
            setRawVersion((v) => v + 1);
            setMode('raw');
          }}
        >
          YAML / JSON
        </button>
      </div>
      {mode === 'form' ? (
        <>
          <fieldset className="plain" disabled={readOnly}>
            <label>
              Node type
              <select
                aria-label="Node type"
                value={value.type ?? ''}
                onChange={(e) => set('type', e.target.value)}
              >
                <option value="">(choose)</option>
                {[...new Set([...(catalog?.keys() ?? []), ...(value.type === undefined ? [] : [value.type])])]
                  .sort()
                  .map((t) => (
                    <option key={t} value={t}>
                      {t}
                    </option>
                  ))}
              </select>
            </label>
            <label>
              Description
              <input
                aria-label="Shared config description"
                value={value.description ?? ''}
                onChange={(e) => set('description', e.target.value)}
              />
            </label>
            <label>
              Builds on (config_ref)
              <input
                aria-label="Shared config config_ref"
                value={value.config_ref ?? ''}
                placeholder="none"
                onChange={(e) => set('config_ref', e.target.value)}
              />
            </label>
          </fieldset>
          {plugin !== undefined ? (
            <SchemaForm
              plugin={plugin}
              config={value.config}
              hasConfigRef={value.config_ref !== undefined}
              readOnly={readOnly}
              onChange={(config, field) => doc.set({ ...value, config }, `config.${field}`)}
            />
          ) : (
            <p className="muted">
              {catalog === undefined ? 'Loading…' : 'Choose a node type to edit its config.'}
            </p>
          )}
        </>
      ) : (
        <RawEditor
          key={rawVersion}
          label="shared config definition"
          value={value}
          readOnly={readOnly}
          applyLabel="Apply"
          onApply={applyRaw}
        />
      )}
      <div className="buttons">
        {!readOnly && (
          <button type="button" className="primary" onClick={() => void save()}>
            Save
          </button>
        )}
        <button type="button" onClick={() => confirmDiscard(doc.dirty && !readOnly) && onClose()}>
          Close
        </button>
      </div>
    </section>
  );
}

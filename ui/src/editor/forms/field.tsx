import { useState, type ReactNode } from 'react';
import { ConditionBuilder, isConditionKey } from './condition-builder.js';
import { isStoreReference, ReferenceSelect } from './reference-select.js';
import { isSecretKey, SecretInput } from './secret-input.js';
import { isTemplated, TemplatePreview } from './template-preview.js';
import { getAt, pathText, type Key } from './value-path.js';

export type Schema = Record<string, unknown>;

/** What every field needs from the form around it. */
export interface FormContext {
  root: unknown;
  onChange: (path: readonly Key[], value: unknown) => void;
  /** Messages by `config.a.b` path, from the same JSON Schema the gateway uses. */
  issues: ReadonlyMap<string, string[]>;
  templated: readonly string[];
}

type Kind = 'enum' | 'boolean' | 'number' | 'string' | 'number-or-string' | 'array' | 'object' | 'json';

function kindOf(schema: Schema): Kind {
  if (Array.isArray(schema.enum)) return 'enum';
  const t = schema.type;
  if (Array.isArray(t)) {
    const types = t.filter((x) => x !== 'null');
    if (types.length === 1) return kindOf({ ...schema, type: types[0] });
    if (types.every((x) => x === 'string' || x === 'integer' || x === 'number')) return 'number-or-string';
    return 'json';
  }
  if (t === 'boolean') return 'boolean';
  if (t === 'integer' || t === 'number') return 'number';
  if (t === 'string') return 'string';
  if (t === 'array') return schema.items !== undefined && !Array.isArray(schema.items) ? 'array' : 'json';
  if (t === 'object' && typeof schema.properties === 'object' && schema.additionalProperties === false)
    return 'object';
  if (t === 'object' && typeof schema.properties === 'object' && schema.additionalProperties === undefined)
    return 'object';
  return 'json';
}

const showDefault = (schema: Schema): string | undefined =>
  schema.default === undefined ? undefined : JSON.stringify(schema.default);

interface FieldProps {
  name: string;
  path: readonly Key[];
  schema: Schema;
  required: boolean;
  ctx: FormContext;
}

/** One config key as a typed control, with its description, default, preview and problems. */
export function Field({ name, path, schema, required, ctx }: FieldProps) {
  const value = getAt(ctx.root, path);
  const kind = kindOf(schema);
  const key = pathText(path);
  const problems = ctx.issues.get(key) ?? [];
  const description = typeof schema.description === 'string' ? schema.description : undefined;
  const def = showDefault(schema);
  const label = `${name}${required ? ' *' : ''}`;
  const set = (v: unknown) => ctx.onChange(path, v);
  const templatedHere = isTemplated(ctx.templated, path.map(String).join('.'));

  let control: ReactNode;
  switch (kind) {
    case 'enum':
      control = (
        <select
          aria-label={name}
          value={value === undefined ? '' : JSON.stringify(value)}
          onChange={(e) => set(e.target.value === '' ? undefined : (JSON.parse(e.target.value) as unknown))}
        >
          <option value="">{def === undefined ? '(not set)' : `(default: ${def})`}</option>
          {(schema.enum as unknown[]).map((v) => (
            <option key={JSON.stringify(v)} value={JSON.stringify(v)}>
              {String(v)}
            </option>
          ))}
        </select>
      );
      break;
    case 'boolean':
      control = (
        <input
          type="checkbox"
          role="switch"
          aria-label={name}
          checked={value === undefined ? schema.default === true : value === true}
          onChange={(e) => set(e.target.checked)}
        />
      );
      break;
    case 'number':
    case 'number-or-string':
      control = (
        <NumberInput
          name={name}
          value={value}
          placeholder={def}
          allowText={kind === 'number-or-string'}
          onChange={set}
        />
      );
      break;
    case 'string': {
      const text = typeof value === 'string' ? value : '';
      const props = {
        'aria-label': name,
        value: text,
        placeholder: def === undefined ? '' : `default ${def}`,
        // An emptied key is removed; an emptied list item stays an empty string.
        onChange: (e: { target: { value: string } }) =>
          set(
            e.target.value === '' && typeof path[path.length - 1] !== 'number' ? undefined : e.target.value,
          ),
      };
      control = isStoreReference(name, schema) ? (
        <ReferenceSelect kind="stores" label={name} value={text === '' ? undefined : text} onChange={set} />
      ) : isSecretKey(name) ? (
        <SecretInput {...props} />
      ) : (
        <input {...props} />
      );
      break;
    }
    case 'array':
      return (
        <ArrayField
          name={name}
          path={path}
          schema={schema}
          ctx={ctx}
          problems={problems}
          required={required}
        />
      );
    case 'object':
      return (
        <fieldset className="nested" data-field={key}>
          <legend>{label}</legend>
          {description !== undefined && <p className="help">{description}</p>}
          <ObjectFields schema={schema} path={path} ctx={ctx} />
          <Problems problems={problems} name={name} />
        </fieldset>
      );
    case 'json':
      if (isConditionKey(name, schema))
        return (
          <fieldset className={`nested${problems.length > 0 ? ' invalid' : ''}`} data-field={key}>
            <legend>{label}</legend>
            {description !== undefined && <p className="help">{description}</p>}
            <ConditionBuilder
              name={name}
              value={value}
              onChange={set}
              raw={(v, change) => <JsonInput name={name} value={v} onChange={change} />}
            />
            <Problems problems={problems} name={name} />
          </fieldset>
        );
      control = <JsonInput name={name} value={value} onChange={set} />;
      break;
  }

  return (
    <div className={`field${problems.length > 0 ? ' invalid' : ''}`} data-field={key}>
      {kind === 'boolean' ? (
        <label className="switch">
          {control} {label}
          {value === undefined && def !== undefined && <span className="muted"> (default)</span>}
        </label>
      ) : (
        <label>
          <span className="field-name">{label}</span>
          {control}
        </label>
      )}
      {description !== undefined && <p className="help">{description}</p>}
      {templatedHere && typeof value === 'string' && value !== '' && (
        <TemplatePreview name={name} text={value} />
      )}
      <Problems problems={problems} name={name} />
    </div>
  );
}

function Problems({ problems, name }: { problems: string[]; name: string }) {
  if (problems.length === 0) return null;
  return (
    <div className="field-error" role="alert" aria-label={`${name} problem`}>
      {problems.join('; ')}
    </div>
  );
}

/** The properties of an object schema, required first. */
export function ObjectFields({
  schema,
  path,
  ctx,
}: {
  schema: Schema;
  path: readonly Key[];
  ctx: FormContext;
}) {
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const names = Object.keys(props).sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
  return (
    <>
      {names.map((n) => (
        <Field
          key={n}
          name={n}
          path={[...path, n]}
          schema={props[n] ?? {}}
          required={required.has(n)}
          ctx={ctx}
        />
      ))}
    </>
  );
}

function NumberInput(props: {
  name: string;
  value: unknown;
  placeholder: string | undefined;
  allowText: boolean;
  onChange: (v: unknown) => void;
}) {
  const shown = typeof props.value === 'number' || typeof props.value === 'string' ? String(props.value) : '';
  return (
    <input
      aria-label={props.name}
      type={props.allowText ? 'text' : 'number'}
      inputMode="decimal"
      value={shown}
      placeholder={props.placeholder === undefined ? '' : `default ${props.placeholder}`}
      onChange={(e) => {
        const raw = e.target.value.trim();
        if (raw === '') return props.onChange(undefined);
        const n = Number(raw);
        // Saved as a JSON number; text only where the schema also allows a string (`${PORT}`, `10s`).
        props.onChange(Number.isFinite(n) && /^-?\d/.test(raw) ? n : props.allowText ? raw : raw);
      }}
    />
  );
}

function JsonInput({
  name,
  value,
  onChange,
}: {
  name: string;
  value: unknown;
  onChange: (v: unknown) => void;
}) {
  const [text, setText] = useState(() => (value === undefined ? '' : JSON.stringify(value, null, 1)));
  const [bad, setBad] = useState<string | undefined>();
  return (
    <>
      <textarea
        aria-label={name}
        rows={3}
        spellCheck={false}
        value={text}
        placeholder="JSON"
        onChange={(e) => setText(e.target.value)}
        onBlur={() => {
          if (text.trim() === '') {
            setBad(undefined);
            return onChange(undefined);
          }
          try {
            onChange(JSON.parse(text) as unknown);
            setBad(undefined);
          } catch (err) {
            setBad(`not JSON: ${(err as Error).message}`);
          }
        }}
      />
      {bad !== undefined && <span className="field-error">{bad}</span>}
    </>
  );
}

function ArrayField(props: {
  name: string;
  path: readonly Key[];
  schema: Schema;
  ctx: FormContext;
  problems: string[];
  required: boolean;
}) {
  const { name, path, schema, ctx } = props;
  const value = getAt(ctx.root, path);
  const items = Array.isArray(value) ? (value as unknown[]) : [];
  const itemSchema = (schema.items ?? {}) as Schema;
  const objectItems = kindOf(itemSchema) === 'object';
  const remove = (i: number) => {
    const next = items.filter((_, j) => j !== i);
    ctx.onChange(path, next.length === 0 ? undefined : next);
  };
  return (
    <fieldset className="nested array" data-field={pathText(path)}>
      <legend>
        {name}
        {props.required ? ' *' : ''}
      </legend>
      {typeof schema.description === 'string' && <p className="help">{schema.description}</p>}
      {items.map((_, i) => (
        <div key={i} className="array-item">
          {objectItems ? (
            <div className="array-item-fields">
              <ObjectFields schema={itemSchema} path={[...path, i]} ctx={ctx} />
            </div>
          ) : (
            <Field
              name={`${name} ${i + 1}`}
              path={[...path, i]}
              schema={itemSchema}
              required={false}
              ctx={ctx}
            />
          )}
          <button
            type="button"
            className="small danger"
            aria-label={`Remove ${name} ${i + 1}`}
            onClick={() => remove(i)}
          >
            ×
          </button>
        </div>
      ))}
      <button
        type="button"
        className="small"
        aria-label={`Add ${name} item`}
        onClick={() =>
          ctx.onChange(path, [...items, objectItems ? {} : kindOf(itemSchema) === 'number' ? 0 : ''])
        }
      >
        + Add
      </button>
      <Problems problems={props.problems} name={name} />
    </fieldset>
  );
}

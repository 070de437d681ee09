import { useState } from 'react';
import { parse, stringify } from 'yaml';

export type RawFormat = 'json' | 'yaml';

export const formatValue = (value: unknown, format: RawFormat): string =>
  format === 'json' ? JSON.stringify(value ?? {}, null, 2) : stringify(value ?? {}, { lineWidth: 0 });

/** Parses `text` as JSON or YAML; throws with the parser's message. */
export function parseValue(text: string, format: RawFormat): unknown {
  if (text.trim() === '') return {};
  return format === 'json' ? (JSON.parse(text) as unknown) : (parse(text) as unknown);
}

interface Props {
  label: string;
  value: unknown;
  readOnly: boolean;
  /** Answers the problems found (none: applied). */
  onApply: (value: unknown) => string[];
  applyLabel?: string;
  /** Called on every keystroke (the unsaved-changes guard). */
  onEdit?: () => void;
}

/** A value as JSON or YAML text (toggle), applied as a whole. */
export function RawEditor({ label, value, readOnly, onApply, applyLabel = 'Apply', onEdit }: Props) {
  const [format, setFormat] = useState<RawFormat>('yaml');
  const [text, setText] = useState(() => formatValue(value, 'yaml'));
  const [problems, setProblems] = useState<string[]>([]);

  const switchTo = (next: RawFormat) => {
    if (next === format) return;
    try {
      setText(formatValue(parseValue(text, format), next));
      setProblems([]);
    } catch (err) {
      setProblems([`Cannot switch: the ${format.toUpperCase()} does not parse (${(err as Error).message})`]);
      return;
    }
    setFormat(next);
  };

  const apply = () => {
    let parsed: unknown;
    try {
      parsed = parseValue(text, format);
    } catch (err) {
      setProblems([`Invalid ${format.toUpperCase()}: ${(err as Error).message}`]);
      return;
    }
    setProblems(onApply(parsed));
  };

  return (
    <div className="raw-editor">
      <div className="segmented" role="radiogroup" aria-label={`${label} format`}>
        {(['yaml', 'json'] as const).map((f) => (
          <label key={f}>
            <input
              type="radio"
              name={`${label}-format`}
              checked={format === f}
              onChange={() => switchTo(f)}
            />
            {f.toUpperCase()}
          </label>
        ))}
      </div>
      <textarea
        aria-label={label}
        spellCheck={false}
        rows={14}
        value={text}
        readOnly={readOnly}
        onChange={(e) => {
          setText(e.target.value);
          onEdit?.();
        }}
      />
      {problems.length > 0 && (
        <div className="error-box" role="alert" aria-label={`${label} problems`}>
          <ul>
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </div>
      )}
      {!readOnly && (
        <button type="button" onClick={apply}>
          {applyLabel}
        </button>
      )}
    </div>
  );
}

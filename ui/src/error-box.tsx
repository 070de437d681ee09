import type { Issue } from './types.js';

/** An Admin API failure: its message and every `{path, message}` detail. */
export function ErrorBox({ message, details = [] }: { message: string; details?: Issue[] }) {
  return (
    <div className="error-box" role="alert">
      <div>{message}</div>
      {details.length > 0 && (
        <ul>
          {details.map((d, i) => (
            <li key={i}>
              {d.path !== '' && <code>{d.path}</code>} {d.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

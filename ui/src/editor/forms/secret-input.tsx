import { useState, type InputHTMLAttributes } from 'react';

/** A password-style input with a Show/Hide toggle, for credentials and secrets. */
export function SecretInput(props: InputHTMLAttributes<HTMLInputElement> & { 'aria-label': string }) {
  const [shown, setShown] = useState(false);
  return (
    <span className="secret">
      <input {...props} type={shown ? 'text' : 'password'} autoComplete="off" />
      <button
        type="button"
        className="small"
        aria-label={`${shown ? 'Hide' : 'Show'} ${props['aria-label']}`}
        onClick={() => setShown((s) => !s)}
      >
        {shown ? 'Hide' : 'Show'}
      </button>
    </span>
  );
}

/** Key names whose values are secrets (the same idea as the gateway's masking: docs/mcp.md#masking). */
export const isSecretKey = (key: string): boolean =>
  /(secret|passw|credential|private_key|^token$|_token$|api_?key|access_key$|app_key$|signing_key)/i.test(
    key,
  );

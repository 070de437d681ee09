/**
 * `${secret:<manager>:<path>#<field>}` (docs/secrets.md): a value kept in a secret manager. The
 * manager is a key of system.yaml `secrets:`; the path and field are the manager's (a Vault KV
 * path and key, an AWS SecretId and a JSON key of its SecretString, a file path and a JSON key).
 * Without `#field` the reference is the whole value.
 */
export const SECRET_REFERENCE = /\$\{secret:([a-z][a-z0-9_]*):([^#}\s]+)(?:#([^}\s]+))?\}/g;

export interface SecretReference {
  /** As written, `${secret:vault:app/api#key}`; the key of its value everywhere. */
  text: string;
  manager: string;
  path: string;
  field: string | undefined;
}

/** Whether a text holds a reference (cheap: most strings have no `${secret:`). */
export function mentionsSecret(text: string): boolean {
  return text.includes('${secret:');
}

export function secretReferences(text: string): SecretReference[] {
  if (!mentionsSecret(text)) return [];
  return [...text.matchAll(SECRET_REFERENCE)].map((m) => ({
    text: m[0],
    manager: m[1] as string,
    path: m[2] as string,
    field: m[3],
  }));
}

/**
 * Every reference of a JSON-like value with its key path (`policies[0].nodes[1].config.keys[0]`).
 * The path is only spelled out for a string holding a reference: the compiler walks every
 * configuration, most of which holds none.
 */
export function referencesWithPaths(
  value: unknown,
  prefix = '',
): { path: string; reference: SecretReference }[] {
  const out: { path: string; reference: SecretReference }[] = [];
  const segments: (string | number)[] = prefix === '' ? [] : [prefix];
  const spell = () =>
    segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      if (!mentionsSecret(v)) return;
      const path = spell();
      for (const reference of secretReferences(v)) out.push({ path, reference });
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        segments.push(i);
        walk(v[i]);
        segments.pop();
      }
    } else if (v !== null && typeof v === 'object') {
      for (const key in v) {
        segments.push(key);
        walk((v as Record<string, unknown>)[key]);
        segments.pop();
      }
    }
  };
  walk(value);
  return out;
}

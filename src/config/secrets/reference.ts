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

/** Every reference of a JSON-like value with its key path (`policies[0].nodes[1].config.keys[0]`). */
export function referencesWithPaths(
  value: unknown,
  path = '',
  out: { path: string; reference: SecretReference }[] = [],
): { path: string; reference: SecretReference }[] {
  if (typeof value === 'string') {
    for (const reference of secretReferences(value)) out.push({ path, reference });
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) referencesWithPaths(value[i], `${path}[${i}]`, out);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value))
      referencesWithPaths(v, path === '' ? key : `${path}.${key}`, out);
  }
  return out;
}
